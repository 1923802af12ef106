import { DEFAULT_TENANT, type Reply } from '../model/message.js';
import { OUTCOME_KINDS } from '../model/outcome.js';

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

/** Replays of one message a status version can tell apart (`statusVersion`). */
const MAX_STATUS_GENERATION = 2 ** 19 - 2;

const REPLY_COUNT_SPAN = 2 ** 32;

/**
 * Where `status` stands in its message's life, as a number that only grows along it
 * (docs/design.md §2 "Status order"): its generation (a dead-letter replay starts the next), then its
 * stage (queued < running < answered with its delivery pending < final), then how many replies
 * it holds (a dead-letter reply appended to a final status makes it newer). Derived from the
 * status alone, so replicas agree on it without comparing their clocks.
 */
export function statusVersion(
  status: Pick<MessageStatus, 'generation' | 'status' | 'delivery' | 'replies'>,
): number {
  const stage =
    status.status === 'queued' ? 0 : status.status === 'running' ? 1 : isFinalStatus(status) ? 3 : 2;
  const generation = Math.min(status.generation, MAX_STATUS_GENERATION);
  return (generation * 4 + stage) * REPLY_COUNT_SPAN + Math.min(status.replies.length, REPLY_COUNT_SPAN - 1);
}

/** What ordering two statuses of one message looks at (`replacesStatus`). */
export interface StatusRank {
  /** `statusVersion` of the status. */
  version: number;
  /** `isFinalStatus` of the status. */
  final: boolean;
}

/** The rank of `status`. */
export function statusRank(
  status: Pick<MessageStatus, 'generation' | 'status' | 'delivery' | 'replies'>,
): StatusRank {
  return { version: statusVersion(status), final: isFinalStatus(status) };
}

/**
 * Whether a status ranked `incoming` may replace one ranked `stored` (`MessageStatusStore.put`):
 * its version is not lower (an equal one is the same stage written again), and a non-final
 * status never replaces a final one — not even a replay's, whose final status replaces the old.
 */
export function replacesStatus(stored: StatusRank, incoming: StatusRank): boolean {
  return incoming.version >= stored.version && (incoming.final || !stored.final);
}

/** Where a message stands, as `GET /v1/messages/{id}` reports it. */
export interface MessageStatus {
  id: string;
  /**
   * The channel that accepted it (`channels[].id`): a channel answers only for its own messages,
   * and a message of another reads as unknown there.
   */
  channel: string;
  /**
   * The message's tenant (`InboundMessage.tenant` as ingress stamped it; `default` when it has none):
   * a status keeps it when its channel later moves to another tenant.
   */
  tenant: string;
  /**
   * How many dead-letter replays came before the run this status tells of: 0 for its first
   * acceptance (`InboundMessage.generation`). Orders statuses with `statusVersion`.
   */
  generation: number;
  status: (typeof MESSAGE_STATUSES)[number];
  pipeline: string | null;
  rule: string | null;
  /** The turn that answered it; shared by every message of a merged burst. */
  turn: string | null;
  /**
   * Its replies: for `completed`, the turn's, also while `delivery` is `pending`; then any sent
   * later (a dead-letter reply). None of an answer that was never delivered.
   */
  replies: Reply[];
  /**
   * Where its replies stand; null when there is nothing to deliver (not answered yet, answered
   * without replies, failed before an answer).
   */
  delivery: (typeof DELIVERY_STATES)[number] | null;
  error: string | null;
  /** The message's OpenTelemetry trace id; null when it was not traced. */
  trace_id: string | null;
  /**
   * When the writer's clock says it was written, ms since the epoch: shown and used to prune,
   * never to order statuses (replicas' clocks differ; `statusVersion` orders them).
   */
  updated_at: number;
}

/** A status as a store kept it: one written before statuses named their tenant has none. */
export type StoredMessageStatus = Omit<MessageStatus, 'tenant'> & { tenant?: string };

/** `stored` as read: without a tenant, the tenant `default`'s, as audit records of that time are. */
export function statusFromStore(stored: StoredMessageStatus): MessageStatus {
  return stored.tenant === undefined ? { ...stored, tenant: DEFAULT_TENANT } : (stored as MessageStatus);
}

/** An `Idempotency-Key` as one caller sent it, and the message it is to name. */
export interface IdempotencyClaim {
  /** The channel the request reached (`channels[].id`). */
  channel: string;
  /**
   * Who sent it: a stable id of the API key that authenticated the request (never the key
   * itself), or `loopback` on a channel without keys. Another caller's key is another key.
   */
  credential: string;
  /** The key as sent. */
  key: string;
  /** What the request asked for: SHA-256 (hex) of the fields that define its message. */
  fingerprint: string;
  /** The message to bind the key to. */
  messageId: string;
  /** How long the binding holds, ms. */
  ttlMs: number;
}

/** What an earlier claim bound a key to. */
export interface IdempotencyBinding {
  messageId: string;
  /** The fingerprint of the request that bound it. */
  fingerprint: string;
}

/**
 * Status and replies of messages accepted over the HTTP channel, and its `Idempotency-Key`s.
 * Each call is atomic; the store owns its connection.
 */
export interface MessageStatusStore {
  /**
   * Stores `status` unless the one stored has a higher version (`statusVersion`) or is final
   * while `status` is not (`replacesStatus`): a write held back (an outbox draining after an
   * outage), or one from a replica whose clock runs ahead, must not overwrite a later one.
   */
  put(status: MessageStatus): Promise<void>;
  /**
   * The status of a message, whichever channel accepted it, or null when unknown (never
   * accepted, or pruned). A channel answers only statuses whose `channel` is its own.
   */
  get(id: string): Promise<MessageStatus | null>;
  /**
   * Binds a caller's idempotency key (per channel and credential) to a message id, with the
   * fingerprint of its request, unless a live binding holds it: the check and the write are one
   * atomic step, so of concurrent claims exactly one binds. Returns null when this call bound
   * it, else the earlier binding (its message id and fingerprint).
   */
  claimIdempotencyKey(claim: IdempotencyClaim): Promise<IdempotencyBinding | null>;
  /** Deletes statuses updated before `beforeMs` and expired keys; returns how many statuses. */
  prune(beforeMs: number): Promise<number>;
}
