import { OUTCOME_KINDS } from '@switchboard/core';
// The id-length entry alone: the package's index loads fastify, which CLI verbs never need.
import { MAX_ID_CHARS } from '@switchboard/http/id-length';
import { z } from 'zod';
import { parseTimeBound } from './time-bound.js';

/** Longest text searched for: a contains-search scans, and a phrase is enough to find a message. */
export const MAX_TEXT_SEARCH_CHARS = 200;

/** A filter compared for equality: as long as an id may be, so a query cannot carry a megabyte. */
const boundedId = z.string().min(1).max(MAX_ID_CHARS).optional();
/** A cursor is the base64 of `[at, id]`; audit record ids are ULIDs, which fit many times over. */
const MAX_CURSOR_CHARS = 2 * MAX_ID_CHARS;

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
  reason: boundedId,
  rule: boundedId,
  channel: boundedId,
  /** The tenant whose channel received the message (`default` for the top-level channels). */
  tenant: boundedId,
  session: boundedId,
  sender: boundedId,
  text: z.string().min(1).max(MAX_TEXT_SEARCH_CHARS).optional(),
  since: timeBound,
  until: timeBound,
  limit: z.coerce
    .number({ error: 'expected 1..1000' })
    .int('expected 1..1000')
    .min(1, 'expected 1..1000')
    .max(1000, 'expected 1..1000')
    .default(50),
  cursor: z.string().min(1).max(MAX_CURSOR_CHARS).optional(),
});

/** The filters besides `text` that narrow a search to one index range (docs/design.md §7). */
const INDEXED_FILTERS = [
  'outcome',
  'reason',
  'rule',
  'channel',
  'tenant',
  'session',
  'sender',
  'since',
] as const;

/**
 * The audit filters of the admin API: a text search must come with another filter or `since`,
 * because on its own it reads the whole audit table, synchronously on the gateway's event loop.
 */
export const AdminAuditFiltersSchema = AuditFiltersSchema.superRefine((filters, ctx) => {
  if (filters.text !== undefined && INDEXED_FILTERS.every((filter) => filters[filter] === undefined)) {
    ctx.addIssue({
      code: 'custom',
      path: ['text'],
      message: `a text search needs another filter or since (e.g. since=24h): alone it reads the whole audit log`,
    });
  }
});
