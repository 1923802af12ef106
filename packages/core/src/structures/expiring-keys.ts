/** Writes between sweeps never drop below this, so small maps are not rescanned constantly. */
const MIN_SWEEP_INTERVAL = 1024;

/**
 * Keys held at most by default: a day of deliveries at about 2 a second (24 h is the default
 * dedup TTL), some tens of MB. Past it the oldest key goes: its redelivery would run again.
 */
const DEFAULT_MAX_KEYS = 200_000;

/**
 * A set of keys that each expire after their own TTL: the in-memory half of delivery dedup
 * (a pool without a journal, and the memory journal). Expired keys count as absent at once, and
 * a sweep deletes them once the writes since the last sweep reach the size the map had after it,
 * so memory stays proportional to the keys within their TTL at amortized O(1) per write. (Against
 * the current size instead, a map that only grows never reaches it: writes and size rise together.)
 *
 * Bounded by `maxKeys`: a rate high enough to hold more keys within their TTL evicts the oldest
 * added first (the map keeps keys in the order they were last added), trading a shorter dedup
 * window for memory that cannot grow with the rate.
 */
export class ExpiringKeys {
  readonly #expiresAtByKey = new Map<string, number>();
  readonly #maxKeys: number;
  #writesSinceSweep = 0;
  #sizeAfterSweep = 0;

  constructor(options: { maxKeys?: number } = {}) {
    this.#maxKeys = options.maxKeys ?? DEFAULT_MAX_KEYS;
  }

  /**
   * Adds `key` until `nowMs + ttlMs`, check-and-set in one synchronous step. Returns false, and
   * changes nothing, when the key is already there and not expired.
   */
  add(key: string, ttlMs: number, nowMs: number): boolean {
    const expiresAt = this.#expiresAtByKey.get(key);
    if (expiresAt !== undefined && expiresAt > nowMs) return false;
    // Deleted first, so that an expired key added again moves to the end of the eviction order.
    if (expiresAt !== undefined) this.#expiresAtByKey.delete(key);
    this.#expiresAtByKey.set(key, nowMs + ttlMs);
    this.#writesSinceSweep += 1;
    if (this.#writesSinceSweep >= Math.max(MIN_SWEEP_INTERVAL, this.#sizeAfterSweep)) this.#sweep(nowMs);
    if (this.#expiresAtByKey.size > this.#maxKeys) {
      const oldest = this.#expiresAtByKey.keys().next().value as string;
      this.#expiresAtByKey.delete(oldest);
    }
    return true;
  }

  /** True when `key` is held and not expired at `nowMs`. */
  has(key: string, nowMs: number): boolean {
    return (this.#expiresAtByKey.get(key) ?? Number.NEGATIVE_INFINITY) > nowMs;
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
