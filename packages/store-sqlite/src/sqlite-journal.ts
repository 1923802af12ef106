import type { AppendResult, DeliveryKey, Journal, QueuedMessage } from '@switchboard/core';
import type { Database } from 'better-sqlite3';
import type { GroupCommit } from './group-commit.js';

/** Delivery keys marked between two sweeps of expired `dedup` rows. */
const SWEEP_EVERY_KEYS = 1000;

/**
 * Journal writes that another store of the same file runs inside a write of its own, so that
 * both commit or neither does: the reply outbox marks a turn's messages answered with the
 * insert of its replies, and removes them with the removal of its delivery.
 */
export interface JournalRowWrites {
  /** Marks the messages answered: `load` returns them with `answered`. Unknown ids are ignored. */
  markAnswered(messageIds: readonly string[]): void;
  /** Deletes the messages. Unknown ids are ignored. */
  remove(messageIds: readonly string[]): void;
}

/** The SQLite `Journal`, with its in-memory bookkeeping made visible for diagnostics and tests. */
export interface SqliteJournal extends Journal {
  /** Ids whose latest removal has been called and has neither committed nor failed yet. */
  readonly pendingRemovals: number;
  /** Its writes for the reply outbox of the same file to run inside its own. */
  readonly rowWrites: JournalRowWrites;
}

interface JournalRow {
  attempt: number;
  retry_at: number | null;
  answered: number;
  payload: string;
}

/**
 * The `Journal` over the `journal` table. Re-appending an id (a dead letter's replay whose
 * original row a failed removal left) replaces the row with a new `seq` (`INSERT OR REPLACE`:
 * SQLite gives it the largest `seq` + 1): the replay is a new acceptance and must not run ahead
 * of the messages its session accepted in between, also after a restart. The `attempt` and
 * `retry_at` columns override the payload's fields, so that turn starts and retries update a
 * number rather than rewrite the JSON.
 *
 * Delivery keys live in the `dedup` table. An append with a key marks it and inserts the entry
 * inside one write of the group commit, so both commit or neither does (a crash, a failed batch).
 * The mark is an upsert that only overwrites an expired row, so "first" is decided by SQLite's
 * write lock, also between processes; the write of one append decides before the next one runs,
 * so of two appends with one key in the same batch the second sees the first's row. Expired rows
 * count as absent at once and are deleted every `SWEEP_EVERY_KEYS` marks.
 */
export function createSqliteJournal(db: Database, commit: GroupCommit, now: () => number): SqliteJournal {
  const insert = db.prepare<[string, number, number | null, string]>(
    'INSERT OR REPLACE INTO journal (id, attempt, retry_at, payload) VALUES (?, ?, ?, ?)',
  );
  const setAttempt = db.prepare<[number, string]>('UPDATE journal SET attempt = ? WHERE id = ?');
  const setRetryAt = db.prepare<[number, string]>('UPDATE journal SET retry_at = ? WHERE id = ?');
  const setAnswered = db.prepare<[string]>('UPDATE journal SET answered = 1 WHERE id = ?');
  const remove = db.prepare<[string]>('DELETE FROM journal WHERE id = ?');
  const load = db.prepare<[], JournalRow>(
    'SELECT attempt, retry_at, answered, payload FROM journal ORDER BY seq',
  );
  const markKey = db.prepare<{ key: string; expiresAt: number; now: number }>(
    `INSERT INTO dedup (key, expires_at) VALUES (@key, @expiresAt)
     ON CONFLICT (key) DO UPDATE SET expires_at = excluded.expires_at WHERE dedup.expires_at <= @now`,
  );
  const sweepKeys = db.prepare<[number]>('DELETE FROM dedup WHERE expires_at <= ?');
  const keySeen = db
    .prepare<[string, number], 1>('SELECT 1 FROM dedup WHERE key = ? AND expires_at > ?')
    .pluck();
  let keysSinceSweep = 0;

  /** Marks the key seen inside the current write; false when it already is, within its TTL. */
  function markSeen(delivery: DeliveryKey): boolean {
    const nowMs = now();
    keysSinceSweep += 1;
    if (keysSinceSweep >= SWEEP_EVERY_KEYS) {
      sweepKeys.run(nowMs);
      keysSinceSweep = 0;
    }
    return markKey.run({ key: delivery.key, expiresAt: nowMs + delivery.ttlMs, now: nowMs }).changes === 1;
  }

  // A turn that starts and ends within one group commit — a fast pipeline under load — need not
  // update its messages' attempt: the removal later in the same transaction deletes the rows.
  // Per id, the number of its latest removal still to run; calls are numbered in call order.
  const pendingRemoval = new Map<string, number>();
  let calls = 0;

  return {
    async append(entry, delivery) {
      const payload = JSON.stringify(entry);
      let result: AppendResult = 'appended';
      // The write decides afresh each time it runs: a failed batch is rolled back and run again.
      await commit(() => {
        result = delivery === undefined || markSeen(delivery) ? 'appended' : 'duplicate';
        if (result === 'appended')
          insert.run(entry.message.id, entry.attempt, entry.retryAtMs ?? null, payload);
      });
      return result;
    },
    async seen(deliveryKey) {
      return keySeen.get(deliveryKey, now()) !== undefined;
    },
    markStarted(messageIds, attempt) {
      const call = ++calls;
      return commit(() => {
        for (const id of messageIds) {
          if ((pendingRemoval.get(id) ?? 0) < call) setAttempt.run(attempt, id);
        }
      });
    },
    markRetry(messageIds, retryAtMs) {
      // Retries are rare: no skipping of rows a later removal deletes, as markStarted does.
      return commit(() => {
        for (const id of messageIds) setRetryAt.run(retryAtMs, id);
      });
    },
    remove(messageIds) {
      const call = ++calls;
      for (const id of messageIds) pendingRemoval.set(id, call);
      const forget = () => {
        for (const id of messageIds) {
          if (pendingRemoval.get(id) === call) pendingRemoval.delete(id);
        }
      };
      return commit(() => {
        for (const id of messageIds) remove.run(id);
        forget();
      }).catch((error: unknown) => {
        // The rows stay (rolled back): later starts must update them, and the map must not
        // keep an entry per failed removal for the life of the process.
        forget();
        throw error;
      });
    },
    get pendingRemovals() {
      return pendingRemoval.size;
    },
    rowWrites: {
      markAnswered(messageIds) {
        for (const id of messageIds) setAnswered.run(id);
      },
      remove(messageIds) {
        for (const id of messageIds) remove.run(id);
      },
    },
    async load() {
      // The payload holds `retryAtMs` exactly when `append` wrote a non-null `retry_at`.
      return load.all().map((row) => {
        const entry: QueuedMessage = { ...(JSON.parse(row.payload) as QueuedMessage), attempt: row.attempt };
        if (row.retry_at !== null) entry.retryAtMs = row.retry_at;
        if (row.answered === 1) entry.answered = true;
        return entry;
      });
    },
  };
}
