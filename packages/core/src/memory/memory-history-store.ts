import type { HistoryEntry, HistoryStore } from '../ports/history-store.js';

/** Options of `createMemoryHistoryStore`. */
export interface MemoryHistoryStoreOptions {
  /** Entries kept per session and pipeline; older ones are dropped. Default 1000. */
  maxEntries?: number;
}

const DEFAULTS = { maxEntries: 1000 } satisfies Required<MemoryHistoryStoreOptions>;

/** A `HistoryStore` in process memory, for tests, benchmarks and `store: memory`. */
export function createMemoryHistoryStore(options: MemoryHistoryStoreOptions = {}): HistoryStore {
  const maxEntries = options.maxEntries ?? DEFAULTS.maxEntries;
  const conversations = new Map<string, HistoryEntry[]>();
  // JSON of the pair cannot collide the way a joined string could ("a:b"+"c" vs "a"+"b:c").
  const keyOf = (session: string, pipeline: string) => JSON.stringify([session, pipeline]);

  return {
    async append(session, pipeline, entries) {
      if (entries.length === 0) return;
      const key = keyOf(session, pipeline);
      const history = conversations.get(key) ?? [];
      history.push(...entries.map((entry) => ({ role: entry.role, content: entry.content })));
      conversations.set(key, history.length > maxEntries ? history.slice(-maxEntries) : history);
    },
    async recent(session, pipeline, limit) {
      if (limit <= 0) return [];
      const history = conversations.get(keyOf(session, pipeline)) ?? [];
      return history.slice(-limit).map((entry) => ({ ...entry }));
    },
  };
}
