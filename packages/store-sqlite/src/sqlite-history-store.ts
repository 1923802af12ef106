import type { HistoryEntry, HistoryStore } from '@switchboard/core';
import type { Database } from 'better-sqlite3';
import type { GroupCommit } from './group-commit.js';

/** Conversations whose number of rows the store keeps in memory; the least recently appended go first. */
const COUNTED_CONVERSATIONS = 10_000;

/**
 * The `HistoryStore` over the `history` table. A conversation is trimmed to its newest
 * `maxEntries` once an append takes it past them, so a long-lived session cannot grow the file
 * without bound. The store counts the rows of the conversations it appended to lately (the file
 * belongs to one process), so an append under the cap is its inserts alone: the trim walks the
 * conversation's index, up to `maxEntries` rows. A conversation it has no count for is trimmed
 * and counted on its first append. An append resolves once the group commit that holds it has
 * committed.
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
  const count = db.prepare<[string, string], { rows: number }>(
    'SELECT COUNT(*) AS rows FROM history WHERE session = ? AND pipeline = ?',
  );
  // Newest first, as the index walks backwards; `recent` reverses them, so SQLite sorts nothing.
  const newest = db.prepare<[string, string, number], HistoryEntry>(
    'SELECT role, content FROM history WHERE session = ? AND pipeline = ? ORDER BY seq DESC LIMIT ?',
  );
  /**
   * Rows per conversation (session and pipeline, NUL-joined), never fewer than the file holds:
   * a write rolled back leaves its count raised, which costs a trim that deletes nothing.
   */
  const rowsOf = new Map<string, number>();

  /** Trims the conversation if `added` rows took it past the cap; in the current write. */
  function trimPastCap(session: string, pipeline: string, added: number): void {
    const key = `${session}\u0000${pipeline}`;
    const known = rowsOf.get(key);
    rowsOf.delete(key);
    let rows: number;
    if (known === undefined) {
      trim.run({ session, pipeline, keep: maxEntries });
      rows = (count.get(session, pipeline) as { rows: number }).rows;
    } else {
      rows = known + added;
      if (rows > maxEntries) {
        trim.run({ session, pipeline, keep: maxEntries });
        rows = maxEntries;
      }
    }
    // Inserted last: the map's first key is the conversation appended to least recently.
    rowsOf.set(key, rows);
    if (rowsOf.size > COUNTED_CONVERSATIONS) {
      const oldest = rowsOf.keys().next().value;
      if (oldest !== undefined) rowsOf.delete(oldest);
    }
  }

  return {
    async append(session, pipeline, entries) {
      if (entries.length === 0) return;
      // In the group commit, as the other writes of a turn: a transaction of its own would cost
      // one more WAL commit per message.
      await commit(() => {
        for (const entry of entries) insert.run(session, pipeline, entry.role, entry.content);
        trimPastCap(session, pipeline, entries.length);
      });
    },
    async recent(session, pipeline, limit) {
      return limit > 0 ? newest.all(session, pipeline, limit).reverse() : [];
    },
  };
}
