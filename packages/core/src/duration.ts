import { z } from 'zod';

const UNIT_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 } as const;
const DURATION = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h)$/;

/**
 * Parses a human duration (`1500ms`, `1.5s`, `5m`, `1h`) into milliseconds; a bare number is
 * already milliseconds. Returns `null` when the text is not a duration.
 */
export function parseDurationMs(value: string | number): number | null {
  if (typeof value === 'number') return Number.isFinite(value) && value >= 0 ? value : null;
  const match = DURATION.exec(value.trim());
  if (!match) return null;
  return Math.round(Number(match[1]) * UNIT_MS[match[2] as keyof typeof UNIT_MS]);
}

/** A zod type for a duration: accepts `1.5s`-style strings or milliseconds, outputs milliseconds. */
export function durationMs() {
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
      return ms;
    });
}
