import {
  type IdempotencyBinding,
  type IdempotencyClaim,
  type MessageStatusStore,
  type StoredMessageStatus,
  statusFromStore,
  statusRank,
} from '@switchboard/core';
import type { Database } from 'better-sqlite3';
import type { GroupCommit } from './group-commit.js';

/**
 * The `MessageStatusStore` over the `message_status` and `idempotency_key` tables. A key is
 * claimed by an upsert that only overwrites an expired binding, read back in the same write of
 * the group commit, so two processes cannot both bind one key.
 */
export function createSqliteMessageStatusStore(
  db: Database,
  commit: GroupCommit,
  now: () => number,
): MessageStatusStore {
  // `replacesStatus` in SQL: a version not lower, and never a non-final status over a final one.
  const put = db.prepare<{ id: string; updatedAt: number; version: number; final: number; body: string }>(
    `INSERT INTO message_status (id, updated_at, version, final, body)
     VALUES (@id, @updatedAt, @version, @final, @body)
     ON CONFLICT (id) DO UPDATE SET updated_at = excluded.updated_at, version = excluded.version,
       final = excluded.final, body = excluded.body
     WHERE excluded.version >= message_status.version
       AND (excluded.final = 1 OR message_status.final = 0)`,
  );
  const get = db.prepare<[string], { body: string }>('SELECT body FROM message_status WHERE id = ?');
  const bind = db.prepare<Omit<IdempotencyClaim, 'ttlMs'> & { expiresAt: number; now: number }>(
    `INSERT INTO idempotency_key (channel, credential, key, fingerprint, message_id, expires_at)
     VALUES (@channel, @credential, @key, @fingerprint, @messageId, @expiresAt)
     ON CONFLICT (channel, credential, key) DO UPDATE SET fingerprint = excluded.fingerprint,
       message_id = excluded.message_id, expires_at = excluded.expires_at
     WHERE idempotency_key.expires_at <= @now`,
  );
  const boundTo = db.prepare<[string, string, string], { message_id: string; fingerprint: string }>(
    'SELECT message_id, fingerprint FROM idempotency_key WHERE channel = ? AND credential = ? AND key = ?',
  );
  const pruneStatuses = db.prepare<[number]>('DELETE FROM message_status WHERE updated_at < ?');
  const pruneKeys = db.prepare<[number]>('DELETE FROM idempotency_key WHERE expires_at <= ?');

  /** Binds the key inside the current write; the binding it had already, if it had one. */
  function claim({ ttlMs, ...claimed }: IdempotencyClaim): IdempotencyBinding | null {
    const nowMs = now();
    if (bind.run({ ...claimed, expiresAt: nowMs + ttlMs, now: nowMs }).changes === 1) return null;
    const row = boundTo.get(claimed.channel, claimed.credential, claimed.key);
    return row === undefined ? null : { messageId: row.message_id, fingerprint: row.fingerprint };
  }
  const prune = db.transaction((beforeMs: number): number => {
    pruneKeys.run(now());
    return pruneStatuses.run(beforeMs).changes;
  });

  return {
    put(status) {
      const body = JSON.stringify(status);
      const { version, final } = statusRank(status);
      return commit(() =>
        put.run({ id: status.id, updatedAt: status.updated_at, version, final: final ? 1 : 0, body }),
      );
    },
    async get(id) {
      const row = get.get(id);
      return row === undefined ? null : statusFromStore(JSON.parse(row.body) as StoredMessageStatus);
    },
    async claimIdempotencyKey(claimed) {
      // In the group commit rather than a transaction (a WAL commit) of its own per keyed
      // request. The write decides afresh each time it runs: a failed batch is rolled back and
      // run again; its upsert takes the write lock first, so two processes still cannot both bind.
      let bound: IdempotencyBinding | null = null;
      await commit(() => {
        bound = claim(claimed);
      });
      return bound;
    },
    async prune(beforeMs) {
      return prune(beforeMs);
    },
  };
}
