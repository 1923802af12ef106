import type { Journal, QueuedMessage } from '@switchboard/core';
import type { Database } from 'better-sqlite3';
import type { GroupCommit } from './group-commit.js';

interface JournalRow {
  attempt: number;
  payload: string;
}

/**
 * The `Journal` over the `journal` table. Re-appending an id replaces its payload but keeps its
 * `seq`, so a message journaled again (after a reload) keeps its place in acceptance order.
 */
export function createSqliteJournal(db: Database, commit: GroupCommit): Journal {
  const insert = db.prepare<[string, number, string]>(
    `INSERT INTO journal (id, attempt, payload) VALUES (?, ?, ?)
     ON CONFLICT (id) DO UPDATE SET attempt = excluded.attempt, payload = excluded.payload`,
  );
  const setAttempt = db.prepare<[number, string]>('UPDATE journal SET attempt = ? WHERE id = ?');
  const remove = db.prepare<[string]>('DELETE FROM journal WHERE id = ?');
  const load = db.prepare<[], JournalRow>('SELECT attempt, payload FROM journal ORDER BY seq');

  return {
    append(entry) {
      const payload = JSON.stringify(entry);
      return commit(() => insert.run(entry.message.id, entry.attempt, payload));
    },
    markStarted(messageIds, attempt) {
      return commit(() => {
        for (const id of messageIds) setAttempt.run(attempt, id);
      });
    },
    remove(messageIds) {
      return commit(() => {
        for (const id of messageIds) remove.run(id);
      });
    },
    async load() {
      return load
        .all()
        .map((row) => ({ ...(JSON.parse(row.payload) as QueuedMessage), attempt: row.attempt }));
    },
  };
}
