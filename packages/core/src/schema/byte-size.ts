import { z } from 'zod';

const UNIT_BYTES = {
  b: 1,
  kb: 1000,
  mb: 1_000_000,
  gb: 1_000_000_000,
  kib: 1024,
  mib: 1_048_576,
  gib: 1_073_741_824,
} as const;
const SIZE = /^(\d+(?:\.\d+)?)\s*(b|kb|mb|gb|kib|mib|gib)?$/i;

/**
 * Parses a human size (`512KB`, `25MB`, `1.5GiB`; KB/MB/GB are powers of 1000, KiB/MiB/GiB of
 * 1024) into bytes; a bare number, or a numeric string (`${VAR}` substitution), is bytes. Returns `null` when the text is not a size.
 */
export function parseByteSize(value: string | number): number | null {
  if (typeof value === 'number') return Number.isSafeInteger(value) && value >= 0 ? value : null;
  const match = SIZE.exec(value.trim());
  if (!match) return null;
  const bytes = Math.round(
    Number(match[1]) * UNIT_BYTES[(match[2] ?? 'b').toLowerCase() as keyof typeof UNIT_BYTES],
  );
  return Number.isSafeInteger(bytes) ? bytes : null;
}

/** A zod type for a size: accepts `25MB`-style strings or bytes, outputs bytes within `[min, max]`. */
export function byteSize(bounds: { min: number; max: number }) {
  return z
    .union([z.string(), z.number()])
    .meta({ format: 'byte-size' })
    .transform((value, ctx) => {
      const bytes = parseByteSize(value);
      if (bytes === null) {
        ctx.addIssue({
          code: 'custom',
          message: `invalid size ${JSON.stringify(value)} (use e.g. 512KB, 25MB, 1GiB)`,
        });
        return z.NEVER;
      }
      if (bytes < bounds.min || bytes > bounds.max) {
        ctx.addIssue({
          code: 'custom',
          message: `must be between ${bounds.min} and ${bounds.max} bytes, got ${JSON.stringify(value)}`,
        });
        return z.NEVER;
      }
      return bytes;
    });
}
