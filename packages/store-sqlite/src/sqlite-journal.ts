import type { Journal, QueuedMessage } from '@switchboard/core';
import type { Database } from 'better-sqlite3';

interface JournalRow {
  attempt: number;
  payload: string;
}

/**
 * The `Journal` over the `journal` table. Re-appending an id replaces its payload but keeps its
 * `seq`, so a message journaled again (after a reload) keeps its place in acceptance order.
 */
export function createSqliteJournal(db: Database): Journal {
  const insert = db.prepare<[string, number, string]>(
    `INSERT INTO journal (id, attempt, payload) VALUES (?, ?, ?)
     ON CONFLICT (id) DO UPDATE SET attempt = excluded.attempt, payload = excluded.payload`,
  );
  const setAttempt = db.prepare<[number, string]>('UPDATE journal SET attempt = ? WHERE id = ?');
  const remove = db.prepare<[string]>('DELETE FROM journal WHERE id = ?');
  const load = db.prepare<[], JournalRow>('SELECT attempt, payload FROM journal ORDER BY seq');
  // One transaction per batch: one WAL commit (one fsync at most) instead of one per id.
  const markStarted = db.transaction((ids: readonly string[], attempt: number) => {
    for (const id of ids) setAttempt.run(attempt, id);
  });
  const removeAll = db.transaction((ids: readonly string[]) => {
    for (const id of ids) remove.run(id);
  });

  return {
    async append(entry) {
      insert.run(entry.message.id, entry.attempt, JSON.stringify(entry));
    },
    async markStarted(messageIds, attempt) {
      markStarted(messageIds, attempt);
    },
    async remove(messageIds) {
      removeAll(messageIds);
    },
    async load() {
      return load
        .all()
        .map((row) => ({ ...(JSON.parse(row.payload) as QueuedMessage), attempt: row.attempt }));
    },
  };
}
