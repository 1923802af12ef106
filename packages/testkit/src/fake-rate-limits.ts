/**
 * How the fake platforms count calls against a platform's limits: per bucket (the bot, a chat, a
 * group) a burst of `limit` calls, then `limit` per `perMs`, checked as GCRA — a call at `t`
 * conforms when `t >= fullAt - (limit - 1) * interval - toleranceMs`. The tolerance absorbs the
 * network's jitter between a client taking a token and its request arriving (cell delay
 * variation, in GCRA's terms); a client pacing at the same rates stays within it, a client that
 * does not pace exceeds it at its second call into a chat.
 */

/** One limit: `limit` calls at once, then `limit` per `perMs`. */
export interface FakeRateLimit {
  limit: number;
  perMs: number;
}

/**
 * How late a call may arrive relative to its own pacing, ms, unless a fake is told otherwise:
 * on a loaded test machine a request waits that long between the client's token and the
 * server's read. A client that does not pace still meets the limits at once (its calls into a
 * chat come milliseconds apart).
 */
export const DEFAULT_TOLERANCE_MS = 400;

/** The limits of one fake, and where they count. */
export interface FakeRateLimiter {
  /**
   * Counts a call against `buckets` (bucket name and limit) if it conforms to every one and
   * returns 0; otherwise counts nothing, records a violation and returns the ms until it would
   * conform (at least 1).
   */
  admit(buckets: ReadonlyArray<readonly [string, FakeRateLimit]>, nowMs: number): number;
  /** Calls refused so far for exceeding a limit. */
  violations(): number;
  /** What a platform tells of `bucket` now: calls left at once, and ms until it is full again. */
  state(bucket: readonly [string, FakeRateLimit], nowMs: number): { remaining: number; fullInMs: number };
}

export function createFakeRateLimiter(toleranceMs: number = DEFAULT_TOLERANCE_MS): FakeRateLimiter {
  const fullAtByKey = new Map<string, number>();
  let violations = 0;
  return {
    admit(buckets, nowMs) {
      let waitMs = 0;
      for (const [key, { limit, perMs }] of buckets) {
        const fullAt = fullAtByKey.get(key) ?? nowMs;
        waitMs = Math.max(waitMs, fullAt - (limit - 1) * (perMs / limit) - toleranceMs - nowMs);
      }
      if (waitMs > 0) {
        violations += 1;
        return Math.ceil(waitMs);
      }
      for (const [key, { limit, perMs }] of buckets) {
        fullAtByKey.set(key, Math.max(fullAtByKey.get(key) ?? nowMs, nowMs) + perMs / limit);
      }
      return 0;
    },
    violations: () => violations,
    state([key, { limit, perMs }], nowMs) {
      const fullInMs = Math.max(0, (fullAtByKey.get(key) ?? nowMs) - nowMs);
      return { remaining: Math.max(0, Math.floor(limit - fullInMs / (perMs / limit))), fullInMs };
    },
  };
}
