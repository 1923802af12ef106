import type { OutcomeKind, OutcomeReason, UndeliveredReplies } from '../model/outcome.js';
import type { QueuedMessage } from '../model/queued-message.js';

/**
 * What a dead letter keeps of its message, for replay. `audit.store_text` applies to it as to the
 * `text` column, so it may hold less than the message had; then `replayable` is false and a
 * replay is refused rather than run on a cut message.
 */
export interface DeadLetterPayload extends QueuedMessage {
  /** True when the message was kept whole. */
  replayable: boolean;
  /**
   * `delivery_failed` only: the replies that were not delivered. A replay sends them again
   * through the outbox and never runs the pipeline. Kept only with the whole message.
   */
  undelivered?: UndeliveredReplies;
}

/** One audited outcome (docs/design.md §2 "Outcomes & audit"). */
export interface AuditRecord {
  /**
   * Derived from the end it records (`auditIdOf`: the message, its replay or the delivery that
   * ended it, the outcome kind), 26 characters of Crockford base 32: writing the same end again
   * writes the same record, which `append` keeps once.
   */
  id: string;
  /** Milliseconds since the epoch. */
  at: number;
  outcome: OutcomeKind;
  reason: OutcomeReason | null;
  rule: string | null;
  channel: string;
  /** The tenant whose channel received the message (docs/design.md §10): `default` for the top level. */
  tenant: string;
  platform: string;
  session: string;
  chat_type: string;
  chat_id: string;
  sender_id: string;
  sender_name: string | null;
  pipeline: string | null;
  /** Gateway message id. */
  message_id: string;
  platform_message_id: string;
  /** As configured by `audit.store_text`: full, none (null) or truncated. */
  text: string | null;
  error: string | null;
  /** Dead letters only: the message as it was queued (as far as `audit.store_text` keeps it), for replay. */
  payload: DeadLetterPayload | null;
  /** Dead letters only: when it was replayed (ms), null until then. */
  replayed_at: number | null;
}

/** Every field of `AuditRecord`, in the order the stores keep their columns. */
export const AUDIT_RECORD_FIELDS = [
  'id',
  'at',
  'outcome',
  'reason',
  'rule',
  'channel',
  'platform',
  'session',
  'chat_type',
  'chat_id',
  'sender_id',
  'sender_name',
  'pipeline',
  'message_id',
  'platform_message_id',
  'text',
  'error',
  'payload',
  'replayed_at',
  'tenant',
] as const satisfies readonly (keyof AuditRecord)[];

/** Filters of `GET /admin/audit` and `switchboard audit`; all optional, combined with AND. */
export interface AuditQuery {
  outcome?: OutcomeKind;
  reason?: string;
  rule?: string;
  channel?: string;
  tenant?: string;
  session?: string;
  /** `sender_id` equals this. */
  sender?: string;
  /** The gateway message id (`message_id`) equals this. */
  message?: string;
  /**
   * `text` contains this, ignoring case: ASCII letters everywhere; others as the store's
   * `lower()` folds them (JavaScript's in memory, the database's in PostgreSQL, none in SQLite).
   * Records kept without text never match. A scan within
   * the other filters: callers bound its length and the page size.
   */
  text?: string;
  /** Inclusive lower bound, ms since the epoch. */
  since?: number;
  /** Exclusive upper bound, ms since the epoch. */
  until?: number;
  /** Page size; newest first. */
  limit: number;
  /** Opaque cursor from a previous page's `nextCursor`. */
  cursor?: string;
}

/** The `AuditQuery` filters compared for equality, and the record field each one compares. */
export const AUDIT_EQUALITY_FILTERS = {
  outcome: 'outcome',
  reason: 'reason',
  rule: 'rule',
  channel: 'channel',
  tenant: 'tenant',
  session: 'session',
  sender: 'sender_id',
  message: 'message_id',
} as const satisfies Partial<Record<keyof AuditQuery, keyof AuditRecord>>;

export interface AuditPage {
  items: AuditRecord[];
  /** Null on the last page. */
  nextCursor: string | null;
}

/**
 * The audit log of discarded, ignored (when enabled), dropped and dead-lettered messages.
 *
 * Ordering: pages run newest first with a stable cursor (records appended meanwhile do not
 * shift a page). Dead letters keep their payload so an operator can replay them. The store owns
 * its connection. Left out: metrics, which count every outcome including completed ones.
 */
export interface AuditLog {
  /**
   * Stores `record`. Idempotent by `id`: appending an id that is stored already keeps the stored
   * record unchanged (its replay mark included), so a writer that cannot tell whether its first
   * call landed — the audit outbox's drainer after a crash (docs/design.md §5) — may append again.
   */
  append(record: AuditRecord): Promise<void>;
  query(query: AuditQuery): Promise<AuditPage>;
  /** Dead letters not yet replayed, newest first; with `tenant`, that tenant's only. */
  deadLetters(limit: number, tenant?: string): Promise<AuditRecord[]>;
  /** A dead letter by audit id, or null when there is none with that id. */
  getDeadLetter(id: string): Promise<AuditRecord | null>;
  /**
   * Marks a dead letter replayed (it leaves `deadLetters`); false when it does not exist or was
   * replayed already. A replay's claim is not this mark but the pool's delivery key: the mark
   * follows the enqueue, so a crash between the two leaves a queued message and an unmarked dead
   * letter, never a marked dead letter whose message was not queued.
   */
  markReplayed(id: string, atMs: number): Promise<boolean>;
  /**
   * Deletes a dead letter (replayed or not); false when there is no dead letter with that id. A
   * replay already past its read goes on: its enqueue is the claim, and its mark finds nothing.
   */
  deleteDeadLetter(id: string): Promise<boolean>;
  /** Deletes records older than `beforeMs`; returns how many. */
  prune(beforeMs: number): Promise<number>;
}
