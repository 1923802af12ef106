/**
 * The longest wait a `Retry-After` is taken at: a platform asking for more is misconfigured, and
 * a caller compares the wait with its own limit anyway.
 */
export const MAX_RETRY_AFTER_MS = 24 * 60 * 60 * 1000;

/**
 * The wait an HTTP `Retry-After` header asks for, in ms (RFC 9110 §10.2.3): delay seconds or an
 * HTTP date, measured from `nowMs`; a date in the past is no wait, a wait beyond
 * `MAX_RETRY_AFTER_MS` is cut to it. Undefined when the header is absent or unreadable.
 */
export function retryAfterMs(
  header: string | null | undefined,
  nowMs: number = Date.now(),
): number | undefined {
  const value = header?.trim();
  if (value === undefined || value === '') return undefined;
  let waitMs: number;
  if (/^\d+(\.\d+)?$/.test(value)) waitMs = Number(value) * 1000;
  else {
    const dateMs = Date.parse(value);
    // Date.parse reads many forms; an HTTP date always names its zone, a bare number never is one.
    if (Number.isNaN(dateMs) || !/[a-z]/i.test(value)) return undefined;
    waitMs = dateMs - nowMs;
  }
  return Math.min(MAX_RETRY_AFTER_MS, Math.max(0, Math.ceil(waitMs)));
}
