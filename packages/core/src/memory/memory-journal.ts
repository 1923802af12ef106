import type { AppendResult, Journal } from '../ports/journal.js';
import type { QueuedMessage } from '../model/queued-message.js';
import { ExpiringKeys } from '../structures/expiring-keys.js';

/** Options of `createMemoryJournal`. */
export interface MemoryJournalOptions {
  /** Clock for delivery-key TTLs, ms since the epoch. Default `Date.now`. */
  now?: () => number;
}

/**
 * A `Journal` in process memory: survives nothing, so a pool using it is no more durable than
 * one without; it exists so the pool's write-through path runs in tests and benchmarks.
 * Entries are copied in and out, as a durable journal would serialize them. A delivery key is
 * checked and set in the same synchronous step that stores the entry.
 */
export function createMemoryJournal(options: MemoryJournalOptions = {}): Journal {
  const now = options.now ?? Date.now;
  // A Map keeps insertion order: acceptance order. A re-append (a replay) is deleted first, as
  // re-setting a key would keep its old position.
  const entries = new Map<string, QueuedMessage>();
  const seen = new ExpiringKeys();
  return {
    async append(entry, delivery): Promise<AppendResult> {
      // Copied first: an entry that cannot be copied fails the append before its key is marked.
      const copy = structuredClone(entry);
      if (delivery !== undefined && !seen.add(delivery.key, delivery.ttlMs, now())) return 'duplicate';
      entries.delete(entry.message.id);
      entries.set(entry.message.id, copy);
      return 'appended';
    },
    async seen(deliveryKey) {
      return seen.has(deliveryKey, now());
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
