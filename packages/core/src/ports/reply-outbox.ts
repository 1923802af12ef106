import type { InboundMessage, Reply } from '../model/message.js';
import type { Outcome } from '../model/outcome.js';
import type { SessionKey } from '../model/session-key.js';
import type { Settlement } from './settlement.js';

/**
 * One answered message a delivery settles: enough to record its outcome when the delivery ends
 * (`completed` once delivered, `dead_lettered/delivery_failed` once given up).
 */
export interface DeliveryMessage {
  /** The message without its `raw` platform event (what the outcome and audit need). */
  message: InboundMessage;
  session: SessionKey;
  pipeline: string;
  rule?: string;
  /** The attempt of the turn that answered it. */
  attempt: number;
}

/** Why the last attempt to send a delivery failed. */
export interface DeliveryError {
  code: string;
  message: string;
}

/** Replies waiting to be sent to one chat (docs/design.md §2 "Outbox"). */
export interface Delivery {
  /** Unique: a ULID, or derived from what it answers (a replay: from the dead letter's audit id). */
  id: string;
  /** The channel that sends it (`channels[].id`). */
  channel: string;
  /**
   * The ordering key: the session key of `origin`. Deliveries of one chat leave strictly in the
   * order they were added, one at a time.
   */
  chat: string;
  /** The first message of the turn, which the replies answer (without its `raw` event). */
  origin: InboundMessage;
  /** The messages whose outcome this delivery records when it ends; empty unless `ownsOutcome`. */
  messages: DeliveryMessage[];
  /** The turn that produced the replies; null for a replay's re-send. */
  turnId: string | null;
  replies: Reply[];
  /** A platform message a streamed answer already posted; the final send edits it. */
  draft?: string;
  /**
   * True when the end of this delivery is the end of its messages (a pipeline's answer); false
   * for a dead letter's apology, whose messages already have their outcome.
   */
  ownsOutcome: boolean;
  /**
   * Set on an operator's reply (docs/design.md §2 "Handoff"): the operator's label. Its one
   * message, the reply itself, ends `handed_off/operator_reply` once sent (not `completed`), or
   * `dead_lettered/delivery_failed` once given up, as an answer would.
   */
  operator?: string;
  /** When it was added, ms since the epoch: `outbound.max_age` counts from here. */
  createdAt: number;
  /** Sends tried so far (0 until the first claim ends). */
  attempts: number;
  /** Not to be sent before this time, ms since the epoch (backoff after a failed send). */
  notBefore: number;
  lastError?: DeliveryError;
  /**
   * How long its id is remembered once it ended (sent or given up), in ms: adding it again
   * meanwhile answers `duplicate`. For ids derived from what they answer (a replay of a dead
   * letter), so a second add after the first delivery was sent does not send it again.
   */
  rememberForMs?: number;
}

/** What `claim` hands out: the delivery and the token its settlement must carry. */
export interface DeliveryClaim {
  delivery: Delivery;
  /** Unique per claim: settling with a token the store no longer honours answers `lost`. */
  token: string;
}

/**
 * A claim as a claiming call hands it out, and whether the channel had, besides it, another due
 * chat left unclaimed: when it had none, the caller need not claim again until told (`onDue`) or
 * until a due time passes.
 */
export interface ClaimedDelivery extends DeliveryClaim {
  moreDue: boolean;
}

/**
 * What `add` did: stored the delivery, or found its id stored, reserved or remembered (`rememberForMs`).
 * `ended`, answered only by the reply sender's add (`ReplySender.add`), never by a store: the
 * delivery was sent first and stored ended, in one write that also took its messages out of the
 * journal (`reserve`, `addEnded`).
 */
export type AddResult = 'added' | 'duplicate' | 'ended';

/** What `addAndClaim` did: the add's result, and the claim it made for the caller, if any. */
export interface AddAndClaimResult {
  result: AddResult;
  claim: ClaimedDelivery | null;
  /**
   * Set with no claim when the channel has a due delivery the add left unclaimed: an add made
   * inside another write (a pool settlement, `SettledReplies`) may lease only the delivery it
   * stores, and another chat's head was due first. The caller claims once; unset, it need not
   * claim until told (`onDue`). Never set by `addAndClaim`, which claims what is due.
   */
  dueUnclaimed?: boolean;
}

/** What `endAndClaim` did: the removal's settlement, and the claim it made next, if any. */
export interface EndAndClaimResult {
  settlement: Settlement;
  next: ClaimedDelivery | null;
}

/**
 * The reply outbox (docs/design.md §2 "Outbox"): the replies of answered turns, stored before the
 * turn completes so that a crash or a platform outage never loses an answer that was paid for,
 * and handed to the channel's sender in order per chat.
 *
 * Ordering: per `chat`, deliveries are claimed in the order they were added, and the next one
 * only once the one before is settled (`delivered`, `failed`): a delivery waiting on backoff
 * (`notBefore`) holds its chat back. Different chats go in parallel, the chat whose head was
 * added first claimed first.
 *
 * Claims: each claim carries a token. The calls that fill or free a chat can claim for their
 * caller in the same write (`addAndClaim`, `endAndClaim`), and every claim says whether more is
 * due (`moreDue`), so that a sender asks only when there is something to get: a delivery that
 * can leave at once costs one call to store and claim, and one to remove and claim the next.
 * A store of one process holds a claim until it is settled
 * or the process stops (a reopened store has no claims). A store shared by replicas holds it for
 * a lease longer than the send deadline; once expired, another consumer may claim the delivery
 * and the late settlement answers `lost`. Two consumers never hold the same delivery at once.
 *
 * Atomicity: each call is atomic; the store owns its connection. A store that commits writes in
 * groups (SQLite) commits a settlement together with the writes made in the same tick (the
 * journal removal of the turn, the audit of the outcome). Left out: sending, retry policy and
 * outcomes — the reply sender owns those.
 */
export interface ReplyOutbox {
  /** True when stored deliveries survive a restart. */
  readonly durable: boolean;
  /**
   * True when several processes claim from it (replicas sharing Redis): a settlement may answer
   * `lost`, so the sender records the messages' outcome only once its settlement was applied.
   * False: claims are this process's alone, and a settlement is written in the same tick as the
   * outcome so that a store committing in groups commits both together.
   */
  readonly shared: boolean;
  /**
   * Stores a delivery (durable once this resolves); an id already stored or reserved
   * (`reserve`), or one that ended within its `rememberForMs`, answers `duplicate`.
   */
  add(delivery: Delivery): Promise<AddResult>;
  /**
   * Adds as `add` does, then claims for the caller as `claim(delivery.channel, nowMs)` would,
   * in the same write: the added delivery itself when its chat has nothing ahead, it is due and
   * no other chat's due head is older. A `duplicate` claims nothing. Announces (`onDue`) only what the caller did not take: a
   * new due head it left unclaimed. For a caller that can send one delivery of the channel now.
   */
  addAndClaim(delivery: Delivery, nowMs: number): Promise<AddAndClaimResult>;
  /**
   * Claims, for `channel`, the head of a chat that has no claimed delivery and whose head is due
   * (`notBefore <= nowMs`), oldest head first; null when there is none. The delivery handed out
   * is the holder's to read, not to change (a store in memory may share its nested objects).
   */
  claim(channel: string, nowMs: number): Promise<ClaimedDelivery | null>;
  /**
   * The delivery was sent: removes it, freeing its chat. A store whose calls can fail after it
   * applied them (a network between them) may answer `settled` to the holder's repeat of a
   * removal whose answer never came (Redis: for a delivery remembered by `rememberForMs`), so
   * that its messages get their outcome; any other second settlement answers `lost`. `ended`:
   * the outcomes the removal ends, which a shared outbox keeps in the same atomic write until
   * their records are stored (`KeptOutcome`, docs/design.md §5 "Outcomes kept with their
   * settlement").
   */
  delivered(claim: DeliveryClaim, ended?: readonly Outcome[]): Promise<Settlement>;
  /**
   * The send failed and is tried again: the delivery stays at the head of its chat, one attempt
   * more, with `lastError`, not claimable before `notBeforeMs`.
   */
  retry(claim: DeliveryClaim, notBeforeMs: number, error: DeliveryError): Promise<Settlement>;
  /** The delivery is given up (a dead letter): removes it, freeing its chat (a repeat as `delivered`). */
  failed(claim: DeliveryClaim, ended?: readonly Outcome[]): Promise<Settlement>;
  /**
   * Ends `claim` by removing its delivery (as `delivered` and `failed` do, with the same answer
   * to a repeat), then claims for the caller as `claim(channel, nowMs)` would, in the same write:
   * the sender's way to free one send and take the next. Announces (`onDue`) only a due head the
   * caller did not take.
   */
  endAndClaim(claim: DeliveryClaim, nowMs: number, ended?: readonly Outcome[]): Promise<EndAndClaimResult>;
  /**
   * For a channel whose send waits for the write storing its delivery (`ChannelAdapter.localSend`):
   * claims `delivery` before it is stored, when `addAndClaim` would claim it once added (its chat
   * has nothing stored or claimed, it is due, no other chat's due head waits), for the caller to
   * send it and then store it ended (`addEnded`) or, when that fails, store it to send again
   * (`addReserved`). `duplicate` for an id stored, reserved, or remembered within its
   * `rememberForMs` (nothing to send); null when it cannot be claimed now: the caller adds it instead. Decided at once,
   * writing nothing: the only read is whether its id is remembered (SQLite: one lookup in the
   * index of remembered ids), the rest is the store's claims and heads in memory. Optional: offered by a
   * store of one process that commits its writes in groups (SQLite), where the send and the
   * write that ends the message fit in one commit, and by the store in memory, which has nothing
   * to commit.
   */
  reserve?(delivery: Delivery, nowMs: number): DeliveryClaim | 'duplicate' | null;
  /**
   * Stores a reserved delivery as ended (sent; or, by a sender stopped with an outbox that is not
   * durable, dropped unsent), in one write: its id remembered (`rememberForMs`) and,
   * with the journal in the same store, its messages' rows removed (for a delivery that owns
   * their outcome). Calls `alongside` (the recording of its outcome) while issuing that write:
   * what it writes to the same store (SQLite: the same file — the audit record, the final status)
   * is one unit with it, committed whole or not at all, also when a failed group commit is run
   * again one write at a time. Frees its chat once committed. Rejects when the unit failed,
   * `alongside` throwing included (then nothing of the unit is issued): nothing of it is stored,
   * the reservation still holds, and the caller stores the delivery to send again (`addReserved`).
   */
  addEnded?(claim: DeliveryClaim, alongside?: () => void): Promise<void>;
  /**
   * Stores a reserved delivery that was not stored ended (its send or `addEnded` failed) to be
   * sent again, as `add` does but in the place it was reserved at: ahead of what was added to its
   * chat since, its chat held until that write settled, so that the chat's deliveries still leave
   * in the order they came. Frees its chat either way; rejects when the write failed.
   */
  addReserved?(claim: DeliveryClaim): Promise<AddResult>;
  /** Deliveries stored per channel, claimed ones included; channels with none are left out. */
  pending(): Promise<Record<string, number>>;
  /** Every stored delivery of `channel`, in the order they were added. */
  list(channel: string): Promise<Delivery[]>;
  /**
   * Calls `listener` with a channel whose deliveries may now be claimable (one was added, or a
   * chat was freed). Due times passing are not signalled: the sender keeps its own timer.
   */
  onDue(listener: (channel: string) => void): () => void;
}
