import { CountedKeys, type HistoryEntry, type HistoryStore } from '@switchboard/core';
import type { Database } from 'better-sqlite3';
import type { GroupCommit } from './group-commit.js';

/** Conversations whose number of rows the store keeps in memory; the least recently appended go first. */
const COUNTED_CONVERSATIONS = 10_000;
/**
 * Characters the newest entries of recently used conversations may hold in memory (content, and
 * `ENTRY_COST` per entry and `CONVERSATION_COST` per conversation), so that a session's next turn
 * reads its history without reading the file; the least recently used conversations go first past it.
 */
const KEPT_CONTENT = 4 * 1024 * 1024;
/** Conversations whose entries are kept at most, empty ones included: a new session's first read keeps one. */
const KEPT_CONVERSATIONS = 10_000;
/** What an entry costs in memory besides its content (its object, role and array slot), in characters. */
const ENTRY_COST = 64;
/** What a kept conversation costs besides its entries (its key, record and map slot), in characters. */
const CONVERSATION_COST = 128;

/** A conversation's newest entries as committed, oldest first: the last `window` of its rows. */
interface KeptHistory {
  entries: HistoryEntry[];
  /** The most entries a read asked for: `entries` holds min(window, rows in the file). */
  window: number;
  /** What it counts toward `KEPT_CONTENT` (`costOf`). */
  cost: number;
}

const costOf = (entries: readonly HistoryEntry[]) =>
  entries.reduce((sum, entry) => sum + entry.content.length + ENTRY_COST, CONVERSATION_COST);

/**
 * The `HistoryStore` over the `history` table. A conversation is trimmed to its newest
 * `maxEntries` once an append takes it past them, so a long-lived session cannot grow the file
 * without bound. The store counts the rows of the conversations it appended to lately (the file
 * belongs to one process), so an append under the cap is its inserts alone: the trim walks the
 * conversation's index, up to `maxEntries` rows. A conversation it has no count for is trimmed
 * and counted on its first append. An append resolves once the group commit that holds it has
 * committed.
 *
 * `recent` keeps what it read, and the appends that committed after, for the conversations used
 * last (up to 10,000 of them and 4 Mi characters, counting a fixed cost per entry and per
 * conversation besides the content, so that empty histories count too): the next turn of a session this process answered
 * reads its history from memory. An append that fails forgets the conversation's kept entries.
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
  /** Kept newest entries per conversation (same key), the least recently used first. */
  const kept = new Map<string, KeptHistory>();
  let keptCost = 0;
  /**
   * Appends issued and not yet settled, per conversation: a read meanwhile goes to the file and
   * keeps nothing, since what it reads may or may not hold them yet.
   */
  const appending = new CountedKeys();

  function forget(key: string): void {
    const found = kept.get(key);
    if (found === undefined) return;
    kept.delete(key);
    keptCost -= found.cost;
  }

  /** Keeps `history` as the conversation's newest entries, most recently used. */
  function keep(key: string, history: KeptHistory): void {
    forget(key);
    if (history.cost > KEPT_CONTENT) return;
    kept.set(key, history);
    keptCost += history.cost;
    for (const [oldest, found] of kept) {
      if (keptCost <= KEPT_CONTENT && kept.size <= KEPT_CONVERSATIONS) break;
      kept.delete(oldest);
      keptCost -= found.cost;
    }
  }

  /** Adds committed `entries` to the conversation's kept ones, if it has any. */
  function keepAppended(key: string, entries: readonly HistoryEntry[]): void {
    const found = kept.get(key);
    if (found === undefined) return;
    const all = [...found.entries, ...entries];
    const newest = all.slice(Math.max(0, all.length - Math.min(found.window, maxEntries)));
    keep(key, { entries: newest, window: found.window, cost: costOf(newest) });
  }

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
      const key = `${session}\u0000${pipeline}`;
      const copied = entries.map(({ role, content }) => ({ role, content }));
      appending.add(key);
      try {
        await commit(() => {
          for (const entry of entries) insert.run(session, pipeline, entry.role, entry.content);
          trimPastCap(session, pipeline, entries.length);
        });
        keepAppended(key, copied);
      } catch (err) {
        forget(key);
        throw err;
      } finally {
        appending.delete(key);
      }
    },
    async recent(session, pipeline, limit) {
      if (limit <= 0) return [];
      const key = `${session}\u0000${pipeline}`;
      const found = kept.get(key);
      const settled = !appending.has(key);
      if (found !== undefined && settled && limit <= found.window) {
        keep(key, found);
        return found.entries.slice(Math.max(0, found.entries.length - limit)).map((entry) => ({ ...entry }));
      }
      const read = newest.all(session, pipeline, limit).reverse();
      if (settled)
        keep(key, { entries: read.map((entry) => ({ ...entry })), window: limit, cost: costOf(read) });
      return read;
    },
  };
}
