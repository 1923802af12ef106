import type { HistoryEntry, HistoryStore } from '@switchboard/core';
import type { Database } from 'better-sqlite3';
import type { GroupCommit } from './group-commit.js';

/**
 * The `HistoryStore` over the `history` table. Each append trims the conversation to its newest
 * `maxEntries`, so a long-lived session cannot grow the file without bound. An append resolves once
 * the group commit that holds it has committed.
 */
export function createSqliteHistoryStore(
  db: Database,
  commit: GroupCommit,
  maxEntries: number,
): HistoryStore {
  const insert = db.prepare<[string, string, string, string]>(
    'INSERT INTO history (session, pipeline, role, content) VALUES (?, ?, ?, ?)',
  );
  // The subquery finds the newest row past the kept ones; NULL (nothing to trim) deletes nothing.
  const trim = db.prepare<{ session: string; pipeline: string; keep: number }>(
    `DELETE FROM history WHERE session = @session AND pipeline = @pipeline AND seq <= (
       SELECT seq FROM history WHERE session = @session AND pipeline = @pipeline
       ORDER BY seq DESC LIMIT 1 OFFSET @keep)`,
  );
  // Newest first, as the index walks backwards; `recent` reverses them, so SQLite sorts nothing.
  const newest = db.prepare<[string, string, number], HistoryEntry>(
    'SELECT role, content FROM history WHERE session = ? AND pipeline = ? ORDER BY seq DESC LIMIT ?',
  );

  return {
    async append(session, pipeline, entries) {
      if (entries.length === 0) return;
      // In the group commit, as the other writes of a turn: a transaction of its own would cost
      // one more WAL commit per message.
      await commit(() => {
        for (const entry of entries) insert.run(session, pipeline, entry.role, entry.content);
        trim.run({ session, pipeline, keep: maxEntries });
      });
    },
    async recent(session, pipeline, limit) {
      return limit > 0 ? newest.all(session, pipeline, limit).reverse() : [];
    },
  };
}
