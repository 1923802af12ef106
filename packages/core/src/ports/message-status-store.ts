import type { Reply } from '../message.js';
import { OUTCOME_KINDS } from '../outcome.js';

/** Where a message can stand: waiting, running, or one of the final outcome kinds. */
export const MESSAGE_STATUSES = ['queued', 'running', ...OUTCOME_KINDS] as const;

/**
 * Where the replies of an answered message stand: `pending` in the outbox, `delivered`, or
 * `failed` (given up: a dead letter `delivery_failed`, or dropped at shutdown).
 */
export const DELIVERY_STATES = ['pending', 'delivered', 'failed'] as const;

const OUTCOMES: ReadonlySet<string> = new Set(OUTCOME_KINDS);

/**
 * True when nothing will change the status any more (but replies a dead letter reply adds): the
 * message has its outcome, and its replies are not waiting in the outbox.
 */
export function isFinalStatus(status: Pick<MessageStatus, 'status' | 'delivery'>): boolean {
  return OUTCOMES.has(status.status) && status.delivery !== 'pending';
}

/**
 * Whether `incoming` may replace `stored` (`MessageStatusStore.put`): it is not older, and a
 * non-final status never replaces a final one — a `pending` stamped when the replies were stored
 * may carry the very millisecond their delivery ended in.
 */
export function replacesStatus(
  stored: Pick<MessageStatus, 'status' | 'delivery' | 'updated_at'>,
  incoming: Pick<MessageStatus, 'status' | 'delivery' | 'updated_at'>,
): boolean {
  return incoming.updated_at >= stored.updated_at && (isFinalStatus(incoming) || !isFinalStatus(stored));
}

/** Where a message stands, as `GET /v1/messages/{id}` reports it. */
export interface MessageStatus {
  id: string;
  status: (typeof MESSAGE_STATUSES)[number];
  pipeline: string | null;
  rule: string | null;
  /** The turn that answered it; shared by every message of a merged burst. */
  turn: string | null;
  /** The replies delivered so far (none while `delivery` is `pending`). */
  replies: Reply[];
  /**
   * Where its replies stand; null when there is nothing to deliver (not answered yet, answered
   * without replies, failed before an answer). A status stored by an older build has none.
   */
  delivery?: (typeof DELIVERY_STATES)[number] | null;
  error: string | null;
  /** The message's OpenTelemetry trace id; null when it was not traced. */
  trace_id: string | null;
  /** Milliseconds since the epoch. */
  updated_at: number;
}

/**
 * Status and replies of messages accepted over the HTTP channel, and its `Idempotency-Key`s.
 * Each call is atomic; the store owns its connection.
 */
export interface MessageStatusStore {
  /**
   * Stores `status` unless the one stored is newer (`updated_at`) or final while `status` is not
   * (`replacesStatus`): a write held back (an outbox draining after an outage) must not overwrite
   * a later one, nor a `pending` delivery a final status of the same millisecond.
   */
  put(status: MessageStatus): Promise<void>;
  /** The status of a message, or null when unknown (never accepted, or pruned). */
  get(id: string): Promise<MessageStatus | null>;
  /**
   * Binds an idempotency key to a message id unless it is bound already. Returns null when this
   * call bound it, else the message id it was bound to earlier.
   */
  claimIdempotencyKey(key: string, messageId: string, ttlMs: number): Promise<string | null>;
  /** Deletes statuses updated before `beforeMs` and expired keys; returns how many statuses. */
  prune(beforeMs: number): Promise<number>;
}
