/** Writes between sweeps never drop below this, so small maps are not rescanned constantly. */
const MIN_SWEEP_INTERVAL = 1024;

/**
 * A set of keys that each expire after their own TTL: the in-memory half of delivery dedup
 * (a pool without a journal, and the memory journal). Expired keys count as absent at once, and
 * a sweep deletes them once the writes since the last sweep reach the size the map had after it,
 * so memory stays proportional to the keys within their TTL at amortized O(1) per write. (Against
 * the current size instead, a map that only grows never reaches it: writes and size rise together.)
 */
export class ExpiringKeys {
  readonly #expiresAtByKey = new Map<string, number>();
  #writesSinceSweep = 0;
  #sizeAfterSweep = 0;

  /**
   * Adds `key` until `nowMs + ttlMs`, check-and-set in one synchronous step. Returns false, and
   * changes nothing, when the key is already there and not expired.
   */
  add(key: string, ttlMs: number, nowMs: number): boolean {
    const expiresAt = this.#expiresAtByKey.get(key);
    if (expiresAt !== undefined && expiresAt > nowMs) return false;
    this.#expiresAtByKey.set(key, nowMs + ttlMs);
    this.#writesSinceSweep += 1;
    if (this.#writesSinceSweep >= Math.max(MIN_SWEEP_INTERVAL, this.#sizeAfterSweep)) this.#sweep(nowMs);
    return true;
  }

  /** How many keys are held, expired ones not yet swept included. */
  get size(): number {
    return this.#expiresAtByKey.size;
  }

  #sweep(nowMs: number): void {
    for (const [key, expiresAt] of this.#expiresAtByKey) {
      if (expiresAt <= nowMs) this.#expiresAtByKey.delete(key);
    }
    this.#writesSinceSweep = 0;
    this.#sizeAfterSweep = this.#expiresAtByKey.size;
  }
}
