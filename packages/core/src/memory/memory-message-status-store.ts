import {
  type IdempotencyBinding,
  type MessageStatusStore,
  type StatusRank,
  type StoredMessageStatus,
  replacesStatus,
  statusFromStore,
  statusRank,
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
 * rather than a tree of objects to trace (bench/HISTORY.md#tuning-pass-2-maps-and-the-journal).
 */
export function createMemoryMessageStatusStore(
  options: MemoryMessageStatusStoreOptions = {},
): MessageStatusStore {
  const now = options.now ?? Date.now;
  const statuses = new Map<string, { rank: StatusRank; updatedAt: number; json: string }>();
  // By `[channel, credential, key]` as JSON: no separator a key could contain.
  const keys = new Map<string, IdempotencyBinding & { expiresAt: number }>();

  return {
    // Not async: it runs for every message, and has nothing to wait for.
    put(status) {
      try {
        const previous = statuses.get(status.id);
        const rank = statusRank(status);
        if (previous !== undefined && !replacesStatus(previous.rank, rank)) return DONE;
        statuses.set(status.id, { rank, updatedAt: status.updated_at, json: JSON.stringify(status) });
        return DONE;
      } catch (error) {
        return Promise.reject(error);
      }
    },
    async get(id) {
      const status = statuses.get(id);
      return status === undefined ? null : statusFromStore(JSON.parse(status.json) as StoredMessageStatus);
    },
    async claimIdempotencyKey({ channel, credential, key, fingerprint, messageId, ttlMs }) {
      const nowMs = now();
      const scoped = JSON.stringify([channel, credential, key]);
      const bound = keys.get(scoped);
      if (bound !== undefined && bound.expiresAt > nowMs)
        return { messageId: bound.messageId, fingerprint: bound.fingerprint };
      keys.set(scoped, { messageId, fingerprint, expiresAt: nowMs + ttlMs });
      return null;
    },
    async prune(beforeMs) {
      const nowMs = now();
      for (const [key, bound] of keys) {
        if (bound.expiresAt <= nowMs) keys.delete(key);
      }
      let pruned = 0;
      for (const [id, status] of statuses) {
        if (status.updatedAt < beforeMs) {
          statuses.delete(id);
          pruned += 1;
        }
      }
      return pruned;
    },
  };
}
