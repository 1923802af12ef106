import type { MessageStatus, MessageStatusStore } from '../ports/message-status-store.js';

/** Options of `createMemoryMessageStatusStore`. */
export interface MemoryMessageStatusStoreOptions {
  /** Clock in ms since the epoch; tests inject their own. Default `Date.now`. */
  now?: () => number;
}

/**
 * A `MessageStatusStore` in process memory. Statuses stay until `prune` (the app calls it on a
 * timer); idempotency keys past their TTL count as unbound at once and are deleted by `prune`.
 * Statuses are copied in and out so callers cannot change what is stored.
 */
export function createMemoryMessageStatusStore(
  options: MemoryMessageStatusStoreOptions = {},
): MessageStatusStore {
  const now = options.now ?? Date.now;
  const statuses = new Map<string, MessageStatus>();
  const keys = new Map<string, { messageId: string; expiresAt: number }>();

  // Statuses are flat but for `replies`; a copy of both levels is all it takes (structuredClone
  // profiled at 6% of the gateway's CPU on the HTTP path).
  const copy = (status: MessageStatus): MessageStatus => ({
    ...status,
    replies: status.replies.map((reply) => ({ ...reply })),
  });

  return {
    async put(status) {
      statuses.set(status.id, copy(status));
    },
    async get(id) {
      const status = statuses.get(id);
      return status === undefined ? null : copy(status);
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
        if (status.updated_at < beforeMs) {
          statuses.delete(id);
          pruned += 1;
        }
      }
      return pruned;
    },
  };
}
