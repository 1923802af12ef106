import {
  type MessageStatus,
  type MessageStatusStore,
  replacesStatus,
} from '../ports/message-status-store.js';

const DONE: Promise<void> = Promise.resolve();

/** Options of `createMemoryMessageStatusStore`. */
export interface MemoryMessageStatusStoreOptions {
  /** Clock in ms since the epoch; tests inject their own. Default `Date.now`. */
  now?: () => number;
}

/**
 * A `MessageStatusStore` in process memory. Statuses stay until `prune` (the app calls it on a
 * timer); idempotency keys past their TTL count as unbound at once and are deleted by `prune`.
 * Statuses are kept as JSON text, like the SQLite store keeps them: callers cannot change what
 * is stored, and a day of statuses is one string each for the garbage collector to skip over
 * rather than a tree of objects to trace (docs/BENCHMARKS.md).
 */
export function createMemoryMessageStatusStore(
  options: MemoryMessageStatusStoreOptions = {},
): MessageStatusStore {
  const now = options.now ?? Date.now;
  const statuses = new Map<
    string,
    { stored: Pick<MessageStatus, 'status' | 'delivery' | 'updated_at'>; json: string }
  >();
  const keys = new Map<string, { messageId: string; expiresAt: number }>();

  return {
    // Not async: it runs for every message, and has nothing to wait for.
    put(status) {
      try {
        const previous = statuses.get(status.id);
        if (previous !== undefined && !replacesStatus(previous.stored, status)) return DONE;
        const { delivery, updated_at } = status;
        statuses.set(status.id, {
          stored: { status: status.status, delivery, updated_at },
          json: JSON.stringify(status),
        });
        return DONE;
      } catch (error) {
        return Promise.reject(error);
      }
    },
    async get(id) {
      const status = statuses.get(id);
      return status === undefined ? null : (JSON.parse(status.json) as MessageStatus);
    },
    async claimIdempotencyKey(key, messageId, ttlMs) {
      const nowMs = now();
      const bound = keys.get(key);
      if (bound !== undefined && bound.expiresAt > nowMs) return bound.messageId;
      keys.set(key, { messageId, expiresAt: nowMs + ttlMs });
      return null;
    },
    async prune(beforeMs) {
      const nowMs = now();
      for (const [key, bound] of keys) {
        if (bound.expiresAt <= nowMs) keys.delete(key);
      }
      let pruned = 0;
      for (const [id, status] of statuses) {
        if (status.stored.updated_at < beforeMs) {
          statuses.delete(id);
          pruned += 1;
        }
      }
      return pruned;
    },
  };
}
