import { crashPoint, crashPointArmed } from '../observability/crash-point.js';
import type { InboundMessage, Reply } from './message.js';
import type { QueuedMessage } from './queued-message.js';
import type { SessionKey } from './session-key.js';
import type { SecretMasker } from '../observability/secret-masker.js';

/** Every message ends in exactly one of these (docs/design.md §2 "Outcomes & audit"). */
export const OUTCOME_KINDS = [
  'completed',
  'discarded',
  'ignored',
  'dropped',
  'dead_lettered',
  'duplicate',
  'handed_off',
] as const;
export type OutcomeKind = (typeof OUTCOME_KINDS)[number];

/** Why a message ended the way it did; `completed` has no reason. */
export const OUTCOME_REASONS = {
  completed: [],
  discarded: ['rule'],
  // `unrouted_event`: an edit, deletion or reaction no `event` rule routes (docs/design.md §2 "Events").
  ignored: ['bot_author', 'not_mentioned', 'unrouted_event'],
  // `refused` and `ingress_failed`: a platform that never redelivers (Discord's gateway) sent a
  // message the gateway could not accept, until the channel stopped or because accepting threw.
  // `quota`: past one of its tenant's quotas (docs/design.md §10).
  dropped: ['queue_overflow', 'shutdown', 'refused', 'ingress_failed', 'quota'],
  // `pipeline_removed`: its pipeline left the config (a reload, a restart) while it was queued.
  dead_lettered: ['max_attempts', 'fatal_error', 'delivery_failed', 'pipeline_removed'],
  duplicate: ['redelivery'],
  // `held`: a user message of a session in handoff, kept for the operator instead of a turn.
  // `operator_reply`: what an operator sent the user from the console or the admin API.
  handed_off: ['held', 'operator_reply'],
} as const satisfies Record<OutcomeKind, readonly string[]>;
export type OutcomeReason = (typeof OUTCOME_REASONS)[OutcomeKind][number];

/** The final word on one message, emitted once through the `OutcomeSink`. */
export interface Outcome {
  kind: OutcomeKind;
  reason?: OutcomeReason;
  /** Milliseconds since the epoch. */
  at: number;
  message: InboundMessage;
  session: SessionKey;
  pipeline?: string;
  /** Name of the routing rule that decided, when one did. */
  rule?: string;
  /** The turn that processed the message; shared by every message of a merged burst. */
  turnId?: string;
  /** A replayed dead letter's run: the dead letter's audit id (`QueuedMessage.replayOf`). */
  replayOf?: string;
  /** The delivery whose end is this outcome (sent or given up by the outbox). */
  deliveryId?: string;
  attempt?: number;
  /**
   * `completed`: the turn's replies. `dead_lettered` at settlement (`fatal_error`,
   * `max_attempts`): the pipeline's dead-letter reply, stored in the outbox, on the outcome of the
   * message it answers (the turn's first dead-lettered one). `delivery_failed`: the replies given up.
   */
  replies?: Reply[];
  error?: { code: string; message: string };
  /**
   * `dead_lettered/delivery_failed` only: the replies that could not be delivered and where they
   * were going, kept in the dead letter so that a replay sends them without running the pipeline.
   */
  undelivered?: UndeliveredReplies;
  /**
   * The message's text (and elements) were cut before the outcome was kept beside its settlement
   * (`audit.store_text`, docs/design.md §5 "Outcomes kept with their settlement"): its recorded
   * dead letter cannot be replayed as it was.
   */
  textCut?: true;
}

/** Replies given up by the outbox, as a `delivery_failed` dead letter keeps them. */
export interface UndeliveredReplies {
  /** The message the replies answer (the delivery's origin). */
  origin: InboundMessage;
  replies: Reply[];
  /** A platform message a streamed answer had posted, which the send was to edit. */
  draft?: string;
}

/** Where outcomes go: audit, metrics and waiting HTTP requests all subscribe in one place. */
export interface OutcomeSink {
  /**
   * Records `outcome`. With `committed` — whether the store write that ends the message, issued
   * in the same tick, committed — listeners that store outcomes are called at once, so that
   * their writes join that commit (SQLite's group commit), and the others only once it resolved
   * true: a message whose end did not commit is not over (its delivery is sent again), so
   * nobody may be told that it is.
   */
  record(outcome: Outcome, committed?: Promise<boolean>): void;
}

/**
 * Keeps the outcomes a settlement ends beside it, in the same atomic write, until their records
 * are stored (docs/design.md §5 "Outcomes kept with their settlement"): given to the settling
 * calls of a store shared by replicas (`QueryPool.complete`, `ReplyOutbox.delivered`…). Returns
 * the form to keep, or null for an outcome that has no records (only counted).
 */
export type KeptOutcome = (outcome: Outcome) => string | null;

/**
 * Records the messages an enqueue pushed out of a full session (`EnqueueResult.overflowed`) as
 * `dropped/queue_overflow`: whoever enqueued owns their outcome.
 */
export function recordOverflowed(sink: OutcomeSink, overflowed: readonly QueuedMessage[], at: number): void {
  for (const dropped of overflowed) sink.record(overflowOutcomeOf(dropped, at));
}

/** The `dropped/queue_overflow` outcome of a message pushed out of its full session at `at`. */
export function overflowOutcomeOf(dropped: QueuedMessage, at: number): Outcome {
  return {
    kind: 'dropped',
    reason: 'queue_overflow',
    at,
    message: dropped.message,
    session: dropped.session,
    pipeline: dropped.pipeline,
    rule: dropped.rule,
    ...(dropped.replayOf === undefined ? {} : { replayOf: dropped.replayOf }),
  };
}

/**
 * Hears an outcome. A listener that stores outcomes is also handed, when there is one, the
 * commit that ends the message (see `OutcomeSink.record`): it is called before that commit, and
 * must not tell anyone the message is over unless it resolves true. A listener that writes a
 * record of the outcome returns a promise of whether that write landed: the outcome counts as
 * recorded (`createOutcomeBus`'s `onRecorded`) once every promise its listeners returned resolved
 * to anything but false; a listener that returns no promise is not waited for.
 */
export type OutcomeListener = (outcome: Outcome, committed?: Promise<boolean>) => unknown;

/** Fans each outcome out to every subscriber; a throwing subscriber cannot hurt the others. */
export interface OutcomeBus extends OutcomeSink {
  /**
   * Adds a listener; `stores`: it writes outcomes to the store (the audit log, the HTTP
   * channel's statuses) and joins the commit that ends the message, see `record`; `records`: it
   * writes a record of the outcome (the audit record, the final status), see `recover`.
   * Returns the function that removes it.
   */
  subscribe(listener: OutcomeListener, options?: { stores?: boolean; records?: boolean }): () => void;
  /**
   * Records an outcome a settlement kept whose settling replica did not let it go (docs/design.md
   * §5 "Outcomes kept with their settlement"): only the listeners that write its records
   * (`stores` or `records`) hear it — the others (metrics, what the console shows) may have
   * counted it on that replica already, whose forget alone was lost.
   */
  recover(outcome: Outcome): void;
}

/**
 * `outcome` with its error text masked. An error's message may quote a secret (a platform error
 * echoing the request path with the token in it); it leaves the process through the listeners —
 * the audit record `GET /admin/audit` answers, the status `GET /v1/messages/{id}` answers — so it
 * is masked once here, for all of them. Outcomes without an error are passed on untouched.
 */
export function maskedOutcome(outcome: Outcome, mask: SecretMasker): Outcome {
  if (outcome.error === undefined) return outcome;
  return { ...outcome, error: { code: outcome.error.code, message: mask(outcome.error.message) } };
}

/**
 * A bus that calls `onListenerError` when a listener throws, and hands listeners each outcome with
 * its error text passed through `mask` (built from every configured secret; default: none).
 * `onRecorded` hears an outcome (as recorded, unmasked) once every write its listeners made of it
 * landed: an outcome kept beside its settlement (`KeptOutcome`) may then be let go.
 */
export function createOutcomeBus(
  onListenerError: (error: unknown) => void = () => {},
  mask?: SecretMasker,
  onRecorded?: (outcome: Outcome) => void,
): OutcomeBus {
  /** Each listener, and what it writes. */
  const listeners = new Map<OutcomeListener, { stores: boolean; records: boolean }>();

  /** Calls the listeners `which` picks; returns the writes they made. */
  function notify(
    outcome: Outcome,
    which: (writes: { stores: boolean; records: boolean }) => boolean,
    committed?: Promise<boolean>,
  ): Promise<unknown>[] {
    const writes: Promise<unknown>[] = [];
    for (const [listener, kind] of listeners) {
      if (!which(kind)) continue;
      try {
        const write = listener(outcome, committed);
        if (write instanceof Promise) writes.push(write);
      } catch (error) {
        onListenerError(error);
      }
    }
    return writes;
  }

  function whenWritten(recorded: Outcome, writes: Promise<unknown>[]): void {
    if (onRecorded === undefined && !crashPointArmed('records.after-write')) return;
    Promise.all(writes).then((landed) => {
      if (!landed.every((done) => done !== false)) return;
      crashPoint('records.after-write');
      onRecorded?.(recorded);
    }, onListenerError);
  }

  const masked = (outcome: Outcome) => (mask === undefined ? outcome : maskedOutcome(outcome, mask));

  return {
    record(recorded, committed) {
      const outcome = masked(recorded);
      if (committed === undefined) {
        const writes = notify(outcome, () => true);
        whenWritten(recorded, writes);
        return;
      }
      const stored = notify(outcome, ({ stores }) => stores, committed);
      // A commit that rejects is one that did not happen: nobody else hears, nothing is thrown.
      committed.then((done) => {
        if (done) whenWritten(recorded, [...stored, ...notify(outcome, ({ stores }) => !stores)]);
      }, onListenerError);
    },
    recover(recovered) {
      whenWritten(
        recovered,
        notify(masked(recovered), ({ stores, records }) => stores || records),
      );
    },
    subscribe(listener, options) {
      listeners.set(listener, { stores: options?.stores ?? false, records: options?.records ?? false });
      return () => listeners.delete(listener);
    },
  };
}
