import type { DedupStore } from '../ports/dedup-store.js';

/** Options of `createMemoryDedupStore`. */
export interface MemoryDedupStoreOptions {
  /** Clock in ms since the epoch; tests inject their own. Default `Date.now`. */
  now?: () => number;
}

/** Writes between sweeps never drop below this, so small maps are not rescanned constantly. */
const MIN_SWEEP_INTERVAL = 1024;

/**
 * A `DedupStore` in process memory. Expired keys are treated as absent when read, and a sweep
 * deletes them once the writes since the last sweep reach the map's size, so memory stays
 * proportional to the keys seen within their TTL at amortized O(1) per write.
 */
export function createMemoryDedupStore(options: MemoryDedupStoreOptions = {}): DedupStore {
  const now = options.now ?? Date.now;
  const expiresAtByKey = new Map<string, number>();
  let writesSinceSweep = 0;

  function sweep(nowMs: number): void {
    for (const [key, expiresAt] of expiresAtByKey) {
      if (expiresAt <= nowMs) expiresAtByKey.delete(key);
    }
    writesSinceSweep = 0;
  }

  return {
    async firstSeen(key, ttlMs) {
      const nowMs = now();
      const expiresAt = expiresAtByKey.get(key);
      if (expiresAt !== undefined && expiresAt > nowMs) return false;
      expiresAtByKey.set(key, nowMs + ttlMs);
      writesSinceSweep += 1;
      if (writesSinceSweep >= Math.max(MIN_SWEEP_INTERVAL, expiresAtByKey.size)) sweep(nowMs);
      return true;
    },
    async forget(key) {
      expiresAtByKey.delete(key);
    },
  };
}
