import { OUTCOME_KINDS } from '@switchboard/core';
import { z } from 'zod';
import { parseTimeBound } from './time-bound.js';

const timeBound = z
  .string()
  .transform((text, ctx) => {
    const at = parseTimeBound(text, Date.now());
    if (at === null) {
      ctx.addIssue({ code: 'custom', message: `expected a duration like 1h or an ISO date, got "${text}"` });
      return z.NEVER;
    }
    return at;
  })
  .optional();

/**
 * The audit filters of docs/design.md §7, as text in (query string or CLI flags) and an `AuditQuery`
 * out: one schema for `GET /admin/audit` and `switchboard audit`.
 */
export const AuditFiltersSchema = z.strictObject({
  outcome: z
    .enum(OUTCOME_KINDS, {
      error: (issue) => `expected one of ${OUTCOME_KINDS.join('|')}, got "${issue.input}"`,
    })
    .optional(),
  reason: z.string().min(1).optional(),
  rule: z.string().min(1).optional(),
  channel: z.string().min(1).optional(),
  session: z.string().min(1).optional(),
  since: timeBound,
  until: timeBound,
  limit: z.coerce
    .number({ error: 'expected 1..1000' })
    .int('expected 1..1000')
    .min(1, 'expected 1..1000')
    .max(1000, 'expected 1..1000')
    .default(50),
  cursor: z.string().min(1).optional(),
});
