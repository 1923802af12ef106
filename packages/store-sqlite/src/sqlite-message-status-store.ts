import { type MessageStatus, type MessageStatusStore, OUTCOME_KINDS, isFinalStatus } from '@switchboard/core';
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
  // `replacesStatus` in SQL: not older, and never a non-final status over a final one.
  const put = db.prepare<{ id: string; updatedAt: number; body: string; final: number; outcomes: string }>(
    `INSERT INTO message_status (id, updated_at, body) VALUES (@id, @updatedAt, @body)
     ON CONFLICT (id) DO UPDATE SET updated_at = excluded.updated_at, body = excluded.body
     WHERE excluded.updated_at >= message_status.updated_at
       AND (@final = 1 OR NOT (
         json_extract(message_status.body, '$.status') IN (SELECT value FROM json_each(@outcomes))
         AND coalesce(json_extract(message_status.body, '$.delivery'), '') <> 'pending'))`,
  );
  const outcomes = JSON.stringify(OUTCOME_KINDS);
  const get = db.prepare<[string], { body: string }>('SELECT body FROM message_status WHERE id = ?');
  const bind = db.prepare<{ key: string; messageId: string; expiresAt: number; now: number }>(
    `INSERT INTO idempotency_key (key, message_id, expires_at) VALUES (@key, @messageId, @expiresAt)
     ON CONFLICT (key) DO UPDATE SET message_id = excluded.message_id, expires_at = excluded.expires_at
     WHERE idempotency_key.expires_at <= @now`,
  );
  const boundTo = db.prepare<[string], { message_id: string }>(
    'SELECT message_id FROM idempotency_key WHERE key = ?',
  );
  const pruneStatuses = db.prepare<[number]>('DELETE FROM message_status WHERE updated_at < ?');
  const pruneKeys = db.prepare<[number]>('DELETE FROM idempotency_key WHERE expires_at <= ?');

  /** Binds `key` inside the current write; the message id it was bound to already, if it was. */
  function claim(key: string, messageId: string, ttlMs: number): string | null {
    const nowMs = now();
    if (bind.run({ key, messageId, expiresAt: nowMs + ttlMs, now: nowMs }).changes === 1) return null;
    return boundTo.get(key)?.message_id ?? null;
  }
  const prune = db.transaction((beforeMs: number): number => {
    pruneKeys.run(now());
    return pruneStatuses.run(beforeMs).changes;
  });

  return {
    put(status) {
      const payload = JSON.stringify(status);
      const final = isFinalStatus(status) ? 1 : 0;
      return commit(() =>
        put.run({ id: status.id, updatedAt: status.updated_at, body: payload, final, outcomes }),
      );
    },
    async get(id) {
      const row = get.get(id);
      return row === undefined ? null : (JSON.parse(row.body) as MessageStatus);
    },
    async claimIdempotencyKey(key, messageId, ttlMs) {
      // In the group commit rather than a transaction (a WAL commit) of its own per keyed
      // request. The write decides afresh each time it runs: a failed batch is rolled back and
      // run again; its upsert takes the write lock first, so two processes still cannot both bind.
      let bound: string | null = null;
      await commit(() => {
        bound = claim(key, messageId, ttlMs);
      });
      return bound;
    },
    async prune(beforeMs) {
      return prune(beforeMs);
    },
  };
}
