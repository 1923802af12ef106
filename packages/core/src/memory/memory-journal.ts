import type { Journal } from '../ports/journal.js';
import type { QueuedMessage } from '../ports/query-pool.js';

/**
 * A `Journal` in process memory: survives nothing, so a pool using it is no more durable than
 * one without; it exists so the pool's write-through path runs in tests and benchmarks.
 * Entries are copied in and out, as a durable journal would serialize them.
 */
export function createMemoryJournal(): Journal {
  // A Map keeps insertion order, and re-setting a key keeps its position: acceptance order.
  const entries = new Map<string, QueuedMessage>();
  return {
    async append(entry) {
      entries.set(entry.message.id, structuredClone(entry));
    },
    async markStarted(messageIds, attempt) {
      for (const id of messageIds) {
        const entry = entries.get(id);
        if (entry !== undefined) entry.attempt = attempt;
      }
    },
    async markRetry(messageIds, retryAtMs) {
      for (const id of messageIds) {
        const entry = entries.get(id);
        if (entry !== undefined) entry.retryAtMs = retryAtMs;
      }
    },
    async remove(messageIds) {
      for (const id of messageIds) entries.delete(id);
    },
    async load() {
      return [...entries.values()].map((entry) => structuredClone(entry));
    },
  };
}
