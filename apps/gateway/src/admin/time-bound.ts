import { parseDurationMs } from '@switchboard/core';

/**
 * Reads a time bound of the audit filters: a duration means "that long ago" (`--since 1h`), anything
 * else must be an ISO 8601 date. Returns ms since the epoch, or null when the text is neither.
 */
export function parseTimeBound(text: string, nowMs: number): number | null {
  const ago = /^\d/.test(text) && !text.includes('-') ? parseDurationMs(text) : null;
  if (ago !== null) return nowMs - ago;
  const at = Date.parse(text);
  return Number.isNaN(at) ? null : at;
}
