import { z } from 'zod';

const NUMERIC = /^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i;

/**
 * A number that may also arrive as a numeric string: `${VAR}` substitution in the YAML always
 * yields text (`pipeline: ${MAX_TURNS:-20}`). Unlike `z.coerce.number()`, `""`, `true` or `[]`
 * are refused rather than read as 0 or 1.
 */
export function numeric(inner: z.ZodNumber) {
  return z
    .union([z.number(), z.string()])
    .transform((value, ctx) => {
      if (typeof value === 'number') return value;
      if (NUMERIC.test(value.trim())) return Number(value);
      ctx.addIssue({ code: 'custom', message: `expected a number, got ${JSON.stringify(value)}` });
      return z.NEVER;
    })
    .pipe(inner);
}
