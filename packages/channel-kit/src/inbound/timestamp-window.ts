/** Why a signed request's timestamp was refused. */
export type TimestampProblem = 'not a number' | 'too old' | 'too far ahead';

/**
 * Checks a request's Unix timestamp (whole seconds, as platforms send it in a header) against
 * `nowMs`: older than `windowMs` is a replay, further ahead than `windowMs` is as suspect (a
 * signature made for later). Returns why it was refused, or `null` when it is within the window.
 */
export function checkTimestampWindow(
  timestampSeconds: string,
  nowMs: number,
  windowMs: number,
): TimestampProblem | null {
  if (!/^\d{1,15}$/.test(timestampSeconds)) return 'not a number';
  const ageMs = nowMs - Number(timestampSeconds) * 1000;
  if (ageMs > windowMs) return 'too old';
  if (-ageMs > windowMs) return 'too far ahead';
  return null;
}
