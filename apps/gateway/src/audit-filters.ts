import { OUTCOME_KINDS } from '@switchboard/core';
// The id-length entry alone: the package's index loads fastify, which CLI verbs never need.
import { MAX_ID_CHARS } from '@switchboard/http/id-length';
import { z } from 'zod';
import { parseTimeBound } from './time-bound.js';

/** Longest text searched for: a contains-search scans, and a phrase is enough to find a message. */
export const MAX_TEXT_SEARCH_CHARS = 200;

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
 * out: one schema for `GET /admin/audit`, `GET /admin/messages` and `switchboard audit`. `sender`
 * is the sender id; `text` a case-insensitive contains-search.
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
  sender: z.string().min(1).max(MAX_ID_CHARS).optional(),
  text: z.string().min(1).max(MAX_TEXT_SEARCH_CHARS).optional(),
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
