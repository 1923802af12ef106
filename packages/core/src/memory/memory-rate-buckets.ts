import type { BucketAttempt, RateBucket, RateBuckets } from '../ports/rate-buckets.js';

export interface MemoryRateBucketsOptions {
  /** The buckets' clock, ms since the epoch. Default: `Date.now`. */
  now?: () => number;
}

/** Takes between sweeps never drop below this, so a few buckets are not rescanned constantly. */
const MIN_SWEEP_INTERVAL = 1024;

/**
 * `RateBuckets` of one process (`store: memory` or `sqlite`). Each bucket is kept as the moment
 * it will be full again (GCRA's "theoretical arrival time": a token bucket in one number). With
 * `interval = perMs / limit`, a bucket has a token at `t` when `t >= fullAt - (burst - 1) *
 * interval`, and taking it moves `fullAt` to `max(fullAt, t) + interval`. A bucket full again is
 * the same as none, so a sweep forgets those once the takes since the last sweep reach the count
 * kept after it. The Redis implementation (`rate-buckets/take.lua`) runs the same arithmetic.
 */
export function createMemoryRateBuckets(options: MemoryRateBucketsOptions = {}): RateBuckets {
  const now = options.now ?? Date.now;
  const fullAtByKey = new Map<string, number>();
  let takesSinceSweep = 0;
  let sizeAfterSweep = 0;

  function sweep(nowMs: number): void {
    for (const [key, fullAt] of fullAtByKey) if (fullAt <= nowMs) fullAtByKey.delete(key);
    takesSinceSweep = 0;
    sizeAfterSweep = fullAtByKey.size;
  }

  function attempt(buckets: readonly RateBucket[]): BucketAttempt {
    const nowMs = now();
    let waitMs = 0;
    const short: number[] = [];
    buckets.forEach(({ key, limit, perMs, burst }, index) => {
      const fullAt = fullAtByKey.get(key) ?? nowMs;
      const bucketWaitMs = fullAt - (burst - 1) * (perMs / limit) - nowMs;
      if (bucketWaitMs > 0) short.push(index);
      waitMs = Math.max(waitMs, bucketWaitMs);
    });
    if (waitMs > 0) return { waitMs: Math.ceil(waitMs), short };
    for (const { key, limit, perMs } of buckets) {
      fullAtByKey.set(key, Math.max(fullAtByKey.get(key) ?? nowMs, nowMs) + perMs / limit);
    }
    takesSinceSweep += 1;
    if (takesSinceSweep >= Math.max(MIN_SWEEP_INTERVAL, sizeAfterSweep)) sweep(nowMs);
    return { waitMs: 0, short };
  }

  return {
    async take(buckets) {
      return attempt(buckets).waitMs;
    },
    async attempt(buckets) {
      return attempt(buckets);
    },
    async giveBack(buckets) {
      const nowMs = now();
      for (const { key, limit, perMs } of buckets) {
        const fullAt = fullAtByKey.get(key);
        if (fullAt === undefined) continue;
        const back = fullAt - perMs / limit;
        if (back <= nowMs) fullAtByKey.delete(key);
        else fullAtByKey.set(key, back);
      }
    },
  };
}
