import type { Journal, QueuedMessage } from '@switchboard/core';
import type { Database } from 'better-sqlite3';
import type { GroupCommit } from './group-commit.js';

interface JournalRow {
  attempt: number;
  retry_at: number | null;
  payload: string;
}

/**
 * The `Journal` over the `journal` table. Re-appending an id replaces its payload but keeps its
 * `seq`, so a message journaled again (after a reload) keeps its place in acceptance order. The
 * `attempt` and `retry_at` columns override the payload's fields, so that turn starts and
 * retries update a number rather than rewrite the JSON.
 */
export function createSqliteJournal(db: Database, commit: GroupCommit): Journal {
  const insert = db.prepare<[string, number, number | null, string]>(
    `INSERT INTO journal (id, attempt, retry_at, payload) VALUES (?, ?, ?, ?)
     ON CONFLICT (id) DO UPDATE SET
       attempt = excluded.attempt, retry_at = excluded.retry_at, payload = excluded.payload`,
  );
  const setAttempt = db.prepare<[number, string]>('UPDATE journal SET attempt = ? WHERE id = ?');
  const setRetryAt = db.prepare<[number, string]>('UPDATE journal SET retry_at = ? WHERE id = ?');
  const remove = db.prepare<[string]>('DELETE FROM journal WHERE id = ?');
  const load = db.prepare<[], JournalRow>('SELECT attempt, retry_at, payload FROM journal ORDER BY seq');
  // A turn that starts and ends within one group commit — a fast pipeline under load — need not
  // update its messages' attempt: the removal later in the same transaction deletes the rows.
  // Per id, the number of its latest removal still to run; calls are numbered in call order.
  const pendingRemoval = new Map<string, number>();
  let calls = 0;

  return {
    append(entry) {
      const payload = JSON.stringify(entry);
      return commit(() => insert.run(entry.message.id, entry.attempt, entry.retryAtMs ?? null, payload));
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
      return commit(() => {
        for (const id of messageIds) {
          remove.run(id);
          if (pendingRemoval.get(id) === call) pendingRemoval.delete(id);
        }
      });
    },
    async load() {
      // The payload holds `retryAtMs` exactly when `append` wrote a non-null `retry_at`.
      return load.all().map((row) => {
        const entry = { ...(JSON.parse(row.payload) as QueuedMessage), attempt: row.attempt };
        return row.retry_at === null ? entry : { ...entry, retryAtMs: row.retry_at };
      });
    },
  };
}
