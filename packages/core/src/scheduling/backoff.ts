/** Retry policy of a pipeline, in milliseconds (`pipelines[].retry`). */
export interface BackoffPolicy {
  baseDelayMs: number;
  maxDelayMs: number;
}

/** buzz caps the exponent so that a huge attempt number cannot overflow. */
const MAX_EXPONENT = 30;

/**
 * base × 2^(attempt−1), capped at the maximum, without jitter: the restart delay of a worker
 * (`process` pipelines) and the core of `retryDelayMs`. `attempt` counts from 1.
 */
export function backoffDelayMs(attempt: number, policy: BackoffPolicy): number {
  const exponent = Math.min(Math.max(attempt - 1, 0), MAX_EXPONENT);
  return Math.min(policy.baseDelayMs * 2 ** exponent, policy.maxDelayMs);
}

/**
 * The wait before retry number `attempt` (1 for the first retry): base × 2^(attempt−1), capped
 * at the maximum, then multiplied by a jitter factor in [0.8, 1.2) so that retries of many
 * sessions spread out (buzz's `retry_delay`); or the backend's Retry-After when that
 * is longer. The result never exceeds `maxDelayMs`: a backend answering `Retry-After: 31536000`
 * must not park a session for a year, and at the cap jitter only shortens the wait.
 * `random` returns [0, 1); a Retry-After of NaN ms is ignored.
 */
export function retryDelayMs(
  attempt: number,
  policy: BackoffPolicy,
  random: () => number = Math.random,
  retryAfterMs?: number,
): number {
  const backoffMs = Math.round(backoffDelayMs(attempt, policy) * (0.8 + 0.4 * random()));
  const askedMs = retryAfterMs === undefined || Number.isNaN(retryAfterMs) ? 0 : retryAfterMs;
  return Math.min(Math.max(backoffMs, askedMs), policy.maxDelayMs);
}
