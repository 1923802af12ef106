/** Retry policy of a pipeline, in milliseconds (`pipelines[].retry`). */
export interface BackoffPolicy {
  baseDelayMs: number;
  maxDelayMs: number;
}

/** buzz caps the exponent so that a huge attempt number cannot overflow (seed 002). */
const MAX_EXPONENT = 30;

/**
 * The wait before retry number `attempt` (1 for the first retry): base × 2^(attempt−1), capped
 * at the maximum, then multiplied by a jitter factor in [0.8, 1.2) so that retries of many
 * sessions spread out (buzz's `retry_delay`, seed 002). `random` returns [0, 1).
 */
export function retryDelayMs(
  attempt: number,
  policy: BackoffPolicy,
  random: () => number = Math.random,
): number {
  const exponent = Math.min(Math.max(attempt - 1, 0), MAX_EXPONENT);
  const capped = Math.min(policy.baseDelayMs * 2 ** exponent, policy.maxDelayMs);
  return Math.round(capped * (0.8 + 0.4 * random()));
}
