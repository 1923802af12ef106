import { z } from 'zod';
import { MAX_TIMER_DELAY_MS } from '../structures/wake-timer.js';

const UNIT_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
const DURATION = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)$/;

/**
 * Parses a human duration (`1500ms`, `1.5s`, `5m`, `1h`, `1d`) into milliseconds; a bare number is
 * already milliseconds. Returns `null` when the text is not a duration.
 */
export function parseDurationMs(value: string | number): number | null {
  if (typeof value === 'number') return Number.isFinite(value) && value >= 0 ? value : null;
  const match = DURATION.exec(value.trim());
  if (!match) return null;
  const ms = Math.round(Number(match[1]) * UNIT_MS[match[2] as keyof typeof UNIT_MS]);
  return Number.isFinite(ms) ? ms : null;
}

/** Bounds of a duration key, as durations (`'1h'`) or milliseconds; both inclusive. */
export interface DurationBounds {
  min?: string | number;
  /** Default: Node's longest timer delay (about 24.8 days); no duration may exceed it. */
  max?: string | number;
}

function boundMs(bound: string | number): number {
  const ms = parseDurationMs(bound);
  if (ms === null) throw new TypeError(`invalid duration bound ${JSON.stringify(bound)}`);
  return ms;
}

/**
 * A zod type for a duration: accepts `1.5s`-style strings or milliseconds, outputs milliseconds
 * within `bounds`. Every duration is bounded: a delay past Node's longest timer fires after 1 ms,
 * so an unbounded `timeout: 30d` would abort every turn at once.
 */
export function durationMs(bounds: DurationBounds = {}) {
  const minMs = bounds.min === undefined ? 0 : boundMs(bounds.min);
  const maxMs = bounds.max === undefined ? MAX_TIMER_DELAY_MS : boundMs(bounds.max);
  const range =
    bounds.min === undefined
      ? `must be at most ${bounds.max ?? `${MAX_TIMER_DELAY_MS}ms`}`
      : `must be between ${bounds.min} and ${bounds.max ?? `${MAX_TIMER_DELAY_MS}ms`}`;
  // `format: duration` tells the generated configuration reference what the text means.
  return z
    .union([z.string(), z.number()])
    .meta({ format: 'duration' })
    .transform((value, ctx) => {
      const ms = parseDurationMs(value);
      if (ms === null) {
        ctx.addIssue({
          code: 'custom',
          message: `invalid duration ${JSON.stringify(value)} (use e.g. 1500ms, 1.5s, 5m)`,
        });
        return z.NEVER;
      }
      if (ms < minMs || ms > maxMs) {
        ctx.addIssue({ code: 'custom', message: `${range}, got ${JSON.stringify(value)}` });
        return z.NEVER;
      }
      return ms;
    });
}
