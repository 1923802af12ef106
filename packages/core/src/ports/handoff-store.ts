import { type AttachmentSummary, DEFAULT_TENANT, type InboundMessage, withoutRaw } from '../model/message.js';
import type { SessionKey } from '../model/session-key.js';

/**
 * A session an operator has taken over (docs/design.md §2 "Handoff"): its messages run no
 * pipeline turn and wait in the operator inbox until the handoff ends.
 */
export interface Handoff {
  session: SessionKey;
  /**
   * The tenant of the session's messages (`InboundMessage.tenant`, `default` when they have none),
   * as it was when the handoff began. Absent on a handoff a store kept from before handoffs named
   * their tenant: its session's channel says whose it is.
   */
  tenant?: string;
  /** Why it began, as the one who began it said (a rule's name, the pipeline's or operator's reason). */
  reason: string;
  /** Who began it: `operator:<label>`, `rule:<name>`, `routing:default`, `pipeline:<id>`. */
  by: string;
  /** Milliseconds since the epoch. */
  startedAt: number;
  /** The last operator action (the start, a reply): `handoff.idle_timeout` counts from here. */
  activeAt: number;
  /** The pipeline the session's messages were routed to, when known: the resumed turn runs there. */
  pipeline: string | null;
  /** The latest message held (or the one that began it): where operator replies go. */
  origin: InboundMessage | null;
  /** User messages held so far. */
  held: number;
  /** User messages held since the last operator reply. */
  unread: number;
  /** When the oldest of the `unread` messages was held; null when there are none. */
  waitingSince: number | null;
  /** The `seq` of the last entry of the transcript (0 before the first). */
  lastSeq: number;
}

/** One line of a handoff's transcript: a user message held, or an operator's reply. */
export type HandoffEntry =
  | {
      /** 1, 2, 3… in the order the entries were written; a reader resumes after the last it saw. */
      seq: number;
      at: number;
      from: 'user';
      /** The held message, without its `raw` platform event. */
      message: InboundMessage;
    }
  | {
      seq: number;
      at: number;
      from: 'operator';
      /** The reply's id (a ULID): its delivery and its audit record carry it. */
      id: string;
      /** The operator's name: the label of the admin token that sent it. */
      operator: string;
      /** `''` for a reply of files only. */
      text: string;
      /** The files it carried, without their bytes. */
      attachments?: AttachmentSummary[];
    };

/** What `HandoffStore.reply` writes of an operator's reply. */
export interface OperatorReplyEntry {
  id: string;
  operator: string;
  text: string;
  attachments?: AttachmentSummary[];
  at: number;
}

/** How a handoff begins. */
export interface HandoffStart {
  /** The session's tenant (`InboundMessage.tenant`); absent for `default`. */
  tenant?: string;
  reason: string;
  by: string;
  at: number;
  pipeline?: string;
  origin?: InboundMessage;
}

/** What `hold` did with the messages. */
export type HoldResult =
  /** Written to the transcript (or there already: a message id is held once). */
  | 'held'
  /** The session is not in handoff (never was, or it ended): the caller runs the turn. */
  | 'not_in_handoff'
  /** The handoff holds `maxEntries` messages (or replies) already: nothing was written. */
  | 'full';

/**
 * Where handoffs live (docs/design.md §2 "Handoff"): in memory with `store: memory`, in the
 * SQLite file, or in Redis shared by the replicas, so that a message accepted on any replica is
 * held and an operator may act from any replica.
 *
 * Atomicity: each call is atomic. `hold` writes only while the session is in handoff, so a turn
 * claimed just as its handoff ended runs, and one claimed just after it began is held. `end`
 * removes the handoff and returns its transcript in one step: whoever ends it (an operator, the
 * idle sweep of any replica) is the only one that gets the transcript. The store owns its
 * connection; time comes from the callers (`at`).
 */
export interface HandoffStore {
  /**
   * Begins a handoff of `session`; one already in force is kept as it is (`created: false`) —
   * beginning twice is not an error, a rule may match every message of the conversation.
   */
  begin(session: SessionKey, start: HandoffStart): Promise<{ handoff: Handoff; created: boolean }>;
  /** The handoff of `session`, or null when it is not in handoff. */
  get(session: SessionKey): Promise<Handoff | null>;
  /**
   * Appends `messages` (in order, without their `raw` events) to the transcript while the session
   * is in handoff, each id once; the last becomes the `origin`, and `pipeline`, when given, the
   * handoff's pipeline. At most `maxEntries` messages held in all (replies do not count).
   */
  hold(
    session: SessionKey,
    messages: readonly InboundMessage[],
    options: { at: number; pipeline?: string; maxEntries: number },
  ): Promise<HoldResult>;
  /**
   * Appends an operator's reply while the session is in handoff, at most `maxEntries` replies in
   * all (held messages do not count, so a user cannot crowd the operator out): `unread` goes to 0 and
   * `activeAt` to `reply.at`. Answers the handoff as it was before the reply (its `waitingSince`
   * is what the reply answered). A reply id is written once: a repeat writes nothing and answers
   * the handoff as it is now.
   */
  reply(
    session: SessionKey,
    reply: OperatorReplyEntry,
    options: { maxEntries: number },
  ): Promise<{ before: Handoff } | Exclude<HoldResult, 'held'>>;
  /** The transcript's entries after `afterSeq`, oldest first, at most `limit`; empty when not in handoff. */
  transcript(session: SessionKey, afterSeq: number, limit: number): Promise<HandoffEntry[]>;
  /** Sessions in handoff, the longest waiting first (by `waitingSince`, then `startedAt`), at most `limit`. */
  list(limit: number): Promise<Handoff[]>;
  /**
   * Ends the handoff of `session` and returns it with its whole transcript, or null when it is not
   * in handoff — or, with `startedAt`, when the one in force began at another time, or with
   * `activeAt`, when an operator acted since (the idle sweep ends only the handoff it found idle,
   * never one begun or answered since).
   */
  end(
    session: SessionKey,
    options?: { startedAt?: number; activeAt?: number },
  ): Promise<{ handoff: Handoff; transcript: HandoffEntry[] } | null>;
  /** Handoffs whose `activeAt` is before `before`, at most `limit`. */
  idle(before: number, limit: number): Promise<Handoff[]>;
  /** Sessions in handoff now. */
  count(): Promise<number>;
}

/**
 * The handoff `begin` creates: in force from `start.at`, nothing held. `origin` is kept without
 * its `raw` platform event, as every message of a transcript is.
 */
export function newHandoff(session: SessionKey, start: HandoffStart): Handoff {
  const origin = start.origin === undefined ? null : withoutRaw(start.origin);
  return {
    session,
    tenant: start.tenant ?? DEFAULT_TENANT,
    reason: start.reason,
    by: start.by,
    startedAt: start.at,
    activeAt: start.at,
    pipeline: start.pipeline ?? null,
    origin,
    held: 0,
    unread: 0,
    waitingSince: null,
    lastSeq: 0,
  };
}

/** What an operator's reply is in a transcript, but its `seq` (which the store numbers). */
export function replyEntryOf(reply: OperatorReplyEntry) {
  return {
    at: reply.at,
    from: 'operator' as const,
    id: reply.id,
    operator: reply.operator,
    text: reply.text,
    ...(reply.attachments === undefined ? {} : { attachments: reply.attachments }),
  };
}
