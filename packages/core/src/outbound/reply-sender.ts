import { type BackoffPolicy, retryDelayMs } from '../scheduling/backoff.js';
import { crashPoint } from '../observability/crash-point.js';
import { isSwitchboardError } from '../model/errors.js';
import type { Outcome, OutcomeKind, OutcomeSink } from '../model/outcome.js';
import type { ChannelAdapter, ChannelSendOptions } from '../ports/channel-adapter.js';
import { type Logger, silentLogger } from '../ports/logger.js';
import type { Settlement } from '../ports/settlement.js';
import type {
  AddAndClaimResult,
  AddResult,
  ClaimedDelivery,
  Delivery,
  DeliveryClaim,
  DeliveryError,
  DeliveryMessage,
  EndAndClaimResult,
  ReplyOutbox,
} from '../ports/reply-outbox.js';
import { sendBeforeStoring } from './send-before-storing.js';
import { sendWithDeadline } from './send-deadline.js';
import { within } from '../structures/within.js';

/** How one channel sends (`channels[].outbound`), in milliseconds. */
export interface OutboundPolicy {
  /** Deadline of one send (`send_timeout`). */
  sendTimeoutMs: number;
  /** Chats sent to at once (`concurrency`). */
  concurrency: number;
  /** Past this age a delivery is given up as a dead letter (`max_age`). */
  maxAgeMs: number;
  /** Waits between tries (`retry`); a platform's `retry_after` is honoured up to its maximum. */
  retry: BackoffPolicy;
}

/** How a delivery attempt ended, for metrics. */
export type DeliveryResult = 'delivered' | 'retried' | 'failed';

export interface ReplySenderOptions {
  outbox: ReplyOutbox;
  /** The channel that sends a delivery, or undefined when it is no longer configured. */
  channel: (id: string) => Pick<ChannelAdapter, 'id' | 'send' | 'localSend'> | undefined;
  /** The outbound policy of a channel, or undefined when it is no longer configured. */
  policy: (channelId: string) => OutboundPolicy | undefined;
  outcomes: OutcomeSink;
  logger?: Logger;
  /** Called after each attempt; must not throw. */
  observer?: { deliveryEnded?(delivery: Delivery, result: DeliveryResult): void };
  /** How often due deliveries are looked for besides `onDue` (backoff ending, another replica). */
  pollMs?: number;
  /** Jitter source, [0, 1). */
  random?: () => number;
  now?: () => number;
}

export interface ReplySender {
  /** Starts sending whatever the outbox holds, the deliveries kept from before a restart first. */
  start(): void;
  /**
   * Adds a delivery to the outbox (as `ReplyOutbox.add`, with its answer) for this sender to
   * send: while the channel has a send free here, the add claims in the same write
   * (`addAndClaim`) and the send starts at once, with no claim and no announcement of its own.
   */
  add(delivery: Delivery): Promise<AddResult>;
  /**
   * Adds a delivery as `add` does, through `write`: another store write that stores it in its own
   * step (a pool settlement with `SettleOptions.replies`), whose result it answers. While the
   * channel has a send free here, `write` gets the time to claim the delivery at (`claimAt`) and
   * the send starts with the claim it hands to `stored`; otherwise it claims none. When the write
   * says a due delivery is left unclaimed (`dueUnclaimed`: another chat was due first), the freed
   * send claims once, as `add`'s would have; otherwise nothing more is asked. Called again
   * after a failure, it claims anew: a claim the failed write may have made is the outbox's to
   * hand back.
   */
  addThrough<T>(
    delivery: Delivery,
    write: (claimAt: number | undefined, stored: Stored) => Promise<T>,
  ): Promise<T>;
  /**
   * Stops claiming, gives the sends under way until `drainTimeoutMs`, then lets them go (their
   * deliveries stay stored: sent again after the next start by a durable outbox). With an outbox
   * that is not durable it first goes on claiming until the outbox is empty and no send made
   * before storing is under way (one that fails stores its delivery), or `drainTimeoutMs` has
   * passed, since what it still holds then is lost.
   */
  stop(options: { drainTimeoutMs: number }): Promise<void>;
  /**
   * With an outbox that is not durable, records the messages of what it still holds as
   * `dropped/shutdown`; call after `stop`, once no turn adds replies any more. A send made before
   * storing that `stop` left behind and that fails records its own `dropped/shutdown`, storing
   * nothing, whether it fails before this call or after.
   */
  dropUnsent(): Promise<void>;
}

/** Takes what an add through another write did (`ReplySender.addThrough`). */
type Stored = (added: AddAndClaimResult) => void;

const DEFAULT_POLL_MS = 1000;
/** How long a settlement waits before writing again to an outbox that did not answer. */
const STORE_RETRY_MS = 1000;

function describeError(error: unknown): DeliveryError {
  if (isSwitchboardError(error)) return { code: error.code, message: error.message };
  return { code: 'SB_CHANNEL_SEND_FAILED', message: error instanceof Error ? error.message : String(error) };
}

/** What a send of `delivery` tells its channel; `committed` for a send made before it is stored. */
function sendOptionsOf(delivery: Delivery, committed?: Promise<boolean>): ChannelSendOptions {
  return {
    ...(delivery.draft === undefined ? {} : { draft: delivery.draft }),
    ...(delivery.turnId === null ? {} : { turn: delivery.turnId }),
    answer: delivery.ownsOutcome,
    ...(committed === undefined ? {} : { committed }),
  };
}

/** What the sender needs of a channel to send. */
type SendingChannel = Pick<ChannelAdapter, 'id' | 'send' | 'localSend'>;

/** Sends `delivery` once through `channel`, within its deadline. */
function sendOnce(
  channel: SendingChannel,
  delivery: Delivery,
  policy: OutboundPolicy,
  committed?: Promise<boolean>,
): Promise<void> {
  crashPoint('send.before-platform-call');
  return sendWithDeadline(
    channel,
    delivery.origin,
    delivery.replies,
    policy.sendTimeoutMs,
    sendOptionsOf(delivery, committed),
  );
}

/** The outcome `kind` of a message a delivery answers, without what only some kinds carry. */
function outcomeOf(delivery: Delivery, answered: DeliveryMessage, kind: OutcomeKind, at: number): Outcome {
  return {
    kind,
    at,
    message: answered.message,
    session: answered.session,
    pipeline: answered.pipeline,
    rule: answered.rule,
    turnId: delivery.turnId ?? undefined,
    deliveryId: delivery.id,
    attempt: answered.attempt,
    replies: delivery.replies,
  };
}

/**
 * The reply sender (docs/design.md §2 "Outbox"): per channel, claims due deliveries — at most
 * `concurrency` chats at once, one delivery per chat, in order — and sends each with its
 * deadline, outside any turn (no pool slot is held). A failed send is retried with backoff,
 * honouring the platform's `retry_after`, while the next try falls within `max_age`; after that,
 * or on an error that cannot pass by retrying, the delivery is a dead letter
 * `delivery_failed` whose audit record keeps the replies. Messages get their outcome when their
 * delivery ends, recorded in the same tick as the outbox write so a store committing in groups
 * commits both together.
 */
export function createReplySender(options: ReplySenderOptions): ReplySender {
  const { outbox, outcomes } = options;
  const logger = (options.logger ?? silentLogger).child({ component: 'reply-sender' });
  const now = options.now ?? Date.now;
  const random = options.random ?? Math.random;
  /**
   * Per channel, the sends under way: each a slot that sends one claim, then the ones its
   * removals claim next, until a removal claims none.
   */
  const inFlight = new Map<string, Set<Promise<void>>>();
  /** Channels whose claim loop runs, and those to loop again once it ends. */
  const claiming = new Set<string>();
  const again = new Set<string>();
  /**
   * Channels told something is due (`onDue`, a claim saying more) while every send slot was
   * taken: the next slot that frees without a next claim looks, instead of leaving it to the poll.
   */
  const asked = new Set<string>();
  /** The claim loops running now: the drain waits for them before it takes stock of the sends. */
  const claimLoops = new Set<Promise<void>>();
  let stopped = true;
  /**
   * Set when the drain left sends behind: their deliveries stay as they are (a durable outbox
   * sends them after the next start; otherwise they are recorded dropped), so a late end of
   * theirs settles and records nothing. A send made before storing has no stored delivery: its
   * late end records its outcome itself (`completed`, or `dropped` with an outbox that is not
   * durable).
   */
  let leftBehind = false;
  let poller: NodeJS.Timeout | undefined;
  let unsubscribe: (() => void) | undefined;
  /** Set while the drain of an outbox in memory waits for it to empty; called once it is. */
  let emptied: (() => void) | undefined;
  /**
   * Sends made before their delivery is stored (`reserve`) under way, and how many ended so far:
   * the outbox does not count them (`pending`), yet one that fails stores its delivery.
   */
  let reservedSending = 0;
  let reservedEnded = 0;

  /** Calls `emptied` once the outbox holds nothing and no send made before storing is under way. */
  function checkEmptied(): void {
    if (emptied === undefined || reservedSending > 0) return;
    const endedBefore = reservedEnded;
    outbox.pending().then(
      (pending) => {
        // A reserved send that began and ended meanwhile may have stored its delivery after the
        // read: its own end checks again.
        if (Object.keys(pending).length === 0 && reservedSending === 0 && reservedEnded === endedBefore)
          emptied?.();
      },
      (err: unknown) => logger.error({ err }, 'claim failed: the outbox is unreachable'),
    );
  }

  /** The outcomes of the messages `delivery` ends as `kind` (none when it owns no outcome). */
  function endsOf(delivery: Delivery, kind: 'completed' | 'dead_lettered', error?: DeliveryError): Outcome[] {
    if (!delivery.ownsOutcome) return [];
    const at = now();
    return delivery.messages.map((answered) => {
      // Built whole, not spread: this runs for every answered message.
      const outcome = outcomeOf(delivery, answered, kind, at);
      if (kind === 'completed' && delivery.operator !== undefined) {
        outcome.kind = 'handed_off';
        outcome.reason = 'operator_reply';
      }
      if (kind === 'dead_lettered') {
        outcome.reason = 'delivery_failed';
        outcome.error = error;
        outcome.undelivered = {
          origin: delivery.origin,
          replies: delivery.replies,
          ...(delivery.draft === undefined ? {} : { draft: delivery.draft }),
        };
      }
      return outcome;
    });
  }

  /** Logs a settlement the outbox did not apply: the claim's lease expired during the send. */
  function checkHeld(claim: DeliveryClaim, settlement: Settlement): void {
    if (settlement === 'lost')
      logger.warn({ deliveryId: claim.delivery.id }, 'lease lost: the delivery was claimed again meanwhile');
  }

  /**
   * Writes a settlement, again every `STORE_RETRY_MS` while the store is unreachable (or, for an
   * outbox of this process alone, while its write fails): giving up
   * would leave the delivery claimed until its lease ends, then send it a second time. A write
   * that was applied before the connection dropped changes nothing when repeated: a removal
   * may answer `settled` (Redis tells the repeat of a remembered delivery), a retry `lost`.
   */
  async function settleRetrying<Written>(
    claim: DeliveryClaim,
    write: () => Promise<Written>,
  ): Promise<Written> {
    for (let failures = 0; ; failures++) {
      try {
        return await write();
      } catch (err) {
        // An outbox of this process alone keeps the claim when its write fails (a rolled-back
        // commit): only writing again frees the chat. A shared one says when it is unreachable.
        const again = !outbox.shared || isSwitchboardError(err, 'SB_STORE_UNAVAILABLE');
        if (!again || leftBehind) throw err;
        if (failures === 0)
          logger.error(
            { err, deliveryId: claim.delivery.id },
            'settlement failed: the outbox is unreachable, retrying',
          );
      }
      await new Promise((resolve) => setTimeout(resolve, STORE_RETRY_MS));
    }
  }

  /**
   * Ends a claim with `write` and records the outcomes `ends` makes of it; answers the claim the
   * write made next, if any. For an outbox of this process alone, in the same tick, so that the
   * outcome's audit record joins the write's group commit; the other listeners hear of it once
   * that commit succeeded, and nobody if it failed: the claim still holds, and the settlement
   * (never the send) is tried again every `STORE_RETRY_MS` until it commits (each try records
   * the same end: the same audit id). For a shared one, after the write — which keeps the
   * outcomes until they are recorded — was applied (a `lost` claim belongs to whoever claimed it
   * again, who records it).
   */
  async function settleAndRecord(
    claim: DeliveryClaim,
    write: (ended: readonly Outcome[]) => Promise<EndAndClaimResult>,
    ends: () => Outcome[],
  ): Promise<ClaimedDelivery | null> {
    if (!outbox.shared) {
      for (let failures = 0; ; failures++) {
        const ended = ends();
        const written = write(ended);
        const committed = written.then(
          ({ settlement }) => settlement === 'settled',
          () => false,
        );
        for (const outcome of ended) outcomes.record(outcome, committed);
        try {
          const { settlement, next } = await written;
          checkHeld(claim, settlement);
          crashPoint('delivery.after-removal');
          return next;
        } catch (err) {
          if (leftBehind) throw err;
          if (failures === 0)
            logger.error(
              { err, deliveryId: claim.delivery.id },
              'settlement failed to commit: writing it again, not sending again',
            );
        }
        await new Promise((resolve) => setTimeout(resolve, STORE_RETRY_MS));
      }
    }
    // Kept by the outbox with the removal: a crash after it and before these records are
    // written leaves them to another replica (docs/design.md §5 "Outcomes kept with their
    // settlement").
    const ended = ends();
    const { settlement, next } = await settleRetrying(claim, () => write(ended));
    crashPoint('delivery.after-removal');
    checkHeld(claim, settlement);
    if (settlement === 'settled') for (const outcome of ended) outcomes.record(outcome);
    return next;
  }

  /**
   * The write that removes a claim's delivery (`end`): while the sender runs, it claims the
   * channel's next due delivery for the same send slot (`endAndClaim`).
   */
  function removal(
    claim: DeliveryClaim,
    end: 'delivered' | 'failed',
  ): (ended: readonly Outcome[]) => Promise<EndAndClaimResult> {
    return async (ended) => {
      if (!stopped) return outbox.endAndClaim(claim, now(), ended);
      return { settlement: await outbox[end](claim, ended), next: null };
    };
  }

  /** How an attempt ended: the claim its removal made next, and whether to look for more. */
  interface AttemptEnd {
    next: ClaimedDelivery | null;
    /** A retry frees a send without claiming: other chats may be due. */
    claimAfter: boolean;
  }

  async function giveUp(claim: DeliveryClaim, error: DeliveryError): Promise<AttemptEnd> {
    const { delivery } = claim;
    logger.error(
      { deliveryId: delivery.id, channel: delivery.channel, attempts: delivery.attempts + 1, error },
      'dead letter: replies could not be delivered',
    );
    const next = await settleAndRecord(claim, removal(claim, 'failed'), () =>
      endsOf(delivery, 'dead_lettered', error),
    );
    options.observer?.deliveryEnded?.(delivery, 'failed');
    return { next, claimAfter: false };
  }

  async function attempt(claim: DeliveryClaim, policy: OutboundPolicy | undefined): Promise<AttemptEnd> {
    const { delivery } = claim;
    const channel = options.channel(delivery.channel);
    if (channel === undefined || policy === undefined) {
      return giveUp(claim, {
        code: 'SB_CHANNEL_SEND_FAILED',
        message: `channel "${delivery.channel}" is no longer configured`,
      });
    }
    try {
      await sendOnce(channel, delivery, policy);
    } catch (err) {
      if (leftBehind) return { next: null, claimAfter: false };
      const error = describeError(err);
      const retryAfterMs = isSwitchboardError(err) ? err.retryAfterMs : undefined;
      const delayMs = retryDelayMs(delivery.attempts + 1, policy.retry, random, retryAfterMs);
      const retryAt = now() + delayMs;
      const retryable = !isSwitchboardError(err) || err.retryable;
      if (!retryable || retryAt >= delivery.createdAt + policy.maxAgeMs) return giveUp(claim, error);
      logger.warn(
        { err, deliveryId: delivery.id, channel: delivery.channel, attempts: delivery.attempts + 1, delayMs },
        'send failed, retrying',
      );
      checkHeld(claim, await settleRetrying(claim, () => outbox.retry(claim, retryAt, error)));
      options.observer?.deliveryEnded?.(delivery, 'retried');
      return { next: null, claimAfter: true };
    }
    crashPoint('send.after-platform-call');
    if (leftBehind) return { next: null, claimAfter: false };
    const next = await settleAndRecord(claim, removal(claim, 'delivered'), () =>
      endsOf(delivery, 'completed'),
    );
    options.observer?.deliveryEnded?.(delivery, 'delivered');
    return { next, claimAfter: false };
  }

  function sendsOf(channel: string): Set<Promise<void>> {
    let sends = inFlight.get(channel);
    if (sends === undefined) {
      sends = new Set();
      inFlight.set(channel, sends);
    }
    return sends;
  }

  /**
   * Takes a send slot of `channel` for `first` (a claim on its way): sends it, then each delivery
   * its removal claims next. A claim that says more is due looks for more at once (other slots
   * may be free); otherwise the channel is not asked again until told or polled, or until a
   * slot frees after it was asked while every slot was taken (`asked`).
   */
  function occupySlot(
    channel: string,
    first: Promise<ClaimedDelivery | null>,
    policy: OutboundPolicy | undefined,
  ): void {
    const sends = sendsOf(channel);
    let claimAfter = false;
    const slot: Promise<void> = (async () => {
      // Once the drain began no send starts: a claim still to send stays (a durable outbox sends
      // it after the next start; memory records it dropped).
      for (let claim = await first; claim !== null && !stopped; ) {
        if (claim.moreDue) pump(channel);
        const deliveryId = claim.delivery.id;
        const ended = await attempt(claim, policy).catch((err: unknown) => {
          logger.error({ err, deliveryId }, 'delivery settlement failed');
          return { next: null, claimAfter: true };
        });
        claim = ended.next;
        claimAfter = ended.claimAfter;
      }
    })().finally(() => {
      sends.delete(slot);
      if (asked.delete(channel) || claimAfter) pump(channel);
      checkEmptied();
    });
    sends.add(slot);
  }

  /** Claims and starts sends for `channel` until its concurrency is used or nothing is due. */
  function pump(channel: string): void {
    if (stopped) return;
    if (claiming.has(channel)) {
      again.add(channel);
      return;
    }
    claiming.add(channel);
    const loop: Promise<void> = claimDue(channel)
      .catch((err: unknown) => logger.error({ err, channel }, 'claim failed: the outbox is unreachable'))
      .finally(() => {
        claimLoops.delete(loop);
        claiming.delete(channel);
        if (again.delete(channel)) pump(channel);
      });
    claimLoops.add(loop);
  }

  async function claimDue(channel: string): Promise<void> {
    const policy = options.policy(channel);
    const sends = sendsOf(channel);
    const limit = policy?.concurrency ?? 1;
    // Looking now: what it was asked before is answered by this loop.
    asked.delete(channel);
    while (!stopped) {
      if (sends.size >= limit) {
        asked.add(channel);
        return;
      }
      const claimed = outbox.claim(channel, now());
      // The slot is taken while the claim is on its way, so that an add claiming meanwhile
      // (`add`) cannot start a send past the channel's concurrency. This loop claims on while
      // more is due: the slot need not look for more. Once the drain began no send starts (the
      // slot checks): the claim stays (a durable outbox sends it after the next start; memory
      // records it dropped).
      occupySlot(
        channel,
        claimed.then(
          (claim) => (claim === null ? null : { ...claim, moreDue: false }),
          () => null,
        ),
        policy,
      );
      const claim = await claimed;
      if (claim === null || !claim.moreDue) return;
    }
  }

  async function channelsWithWork(): Promise<string[]> {
    return Object.keys(await outbox.pending());
  }

  function pumpAll(): void {
    channelsWithWork().then(
      (channels) => {
        for (const channel of channels) pump(channel);
      },
      (err: unknown) => logger.error({ err }, 'claim failed: the outbox is unreachable'),
    );
  }

  /** The outcomes of the messages of `delivery`, not sent before shutdown, as `dropped/shutdown`. */
  function droppedOf(delivery: Delivery): Outcome[] {
    if (!delivery.ownsOutcome) return [];
    return delivery.messages.map((answered) => {
      const dropped = outcomeOf(delivery, answered, 'dropped', now());
      dropped.reason = 'shutdown';
      dropped.error = { code: 'SB_SHUTDOWN', message: 'the replies were not delivered before shutdown' };
      return dropped;
    });
  }

  /** Reserves `delivery` to be sent before it is stored, when its channel and the outbox allow it. */
  function reserve(delivery: Delivery): DeliveryClaim | 'duplicate' | null {
    if (outbox.reserve === undefined || outbox.addEnded === undefined || outbox.addReserved === undefined)
      return null;
    const channel = options.channel(delivery.channel);
    if (channel?.localSend !== true) return null;
    return outbox.reserve(delivery, now());
  }

  return {
    async add(delivery) {
      const { channel } = delivery;
      const policy = options.policy(channel);
      if (stopped || policy === undefined || sendsOf(channel).size >= policy.concurrency)
        return outbox.add(delivery);
      const reserved = reserve(delivery);
      if (reserved === 'duplicate') return reserved;
      if (reserved !== null) {
        const sends = sendsOf(channel);
        reservedSending += 1;
        const sent = sendBeforeStoring(reserved, {
          outbox,
          outcomes,
          logger,
          send: (committed) =>
            sendOnce(options.channel(channel) as SendingChannel, delivery, policy, committed),
          completed: () => endsOf(delivery, 'completed'),
          // Failing once the drain left it behind, it ends `dropped/shutdown` here: `dropUnsent`
          // may have run already and lists only what is stored, so an outbox in memory would keep
          // it unsent and its message without an outcome. A durable one stores it for the next start.
          unsent: () => (leftBehind && !outbox.durable ? droppedOf(delivery) : null),
          delivered: () => options.observer?.deliveryEnded?.(delivery, 'delivered'),
        });
        // Holds a send of the channel, as any send does, until its write settled; then frees it as
        // a send's slot is freed: a delivery stored while every slot was held is claimed at once.
        const slot = sent.then(
          () => {},
          () => {},
        );
        sends.add(slot);
        void slot.finally(() => {
          sends.delete(slot);
          reservedSending -= 1;
          reservedEnded += 1;
          pump(channel);
          checkEmptied();
        });
        return sent;
      }
      const added = outbox.addAndClaim(delivery, now());
      // The slot is taken while the add is on its way, so that its claim fits the concurrency.
      occupySlot(
        channel,
        added.then(
          ({ claim }) => claim,
          () => null,
        ),
        policy,
      );
      return (await added).result;
    },

    async addThrough(delivery, write) {
      const { channel } = delivery;
      const policy = options.policy(channel);
      if (stopped || policy === undefined || sendsOf(channel).size >= policy.concurrency)
        return write(undefined, () => {});
      let handOver: (claim: ClaimedDelivery | null) => void = () => {};
      // The slot is taken while the write is on its way, as for `add`; freed at once if it claims none.
      occupySlot(
        channel,
        new Promise<ClaimedDelivery | null>((resolve) => {
          handOver = resolve;
        }),
        policy,
      );
      try {
        return await write(now(), (added) => {
          // Another chat was due first, which the write did not claim (`addAndClaim` would): the
          // freed slot claims once, as for an announcement heard while it was taken. A delivery
          // stored behind its busy chat leaves nothing to claim.
          if (added.dueUnclaimed === true) asked.add(channel);
          handOver(added.claim);
        });
      } finally {
        handOver(null);
      }
    },

    start() {
      if (!stopped) return;
      stopped = false;
      leftBehind = false;
      unsubscribe = outbox.onDue(pump);
      poller = setInterval(pumpAll, options.pollMs ?? DEFAULT_POLL_MS);
      poller.unref();
      pumpAll();
    },

    async stop({ drainTimeoutMs }) {
      const deadline = Date.now() + drainTimeoutMs;
      // What an outbox in memory still holds after the drain is lost (dropUnsent): it goes on
      // sending, the deliveries queued behind a slow chat too, while the drain lasts.
      if (!stopped && !outbox.durable) {
        const empty = new Promise<void>((resolve) => {
          emptied = resolve;
        });
        checkEmptied();
        const drained = await within(empty, drainTimeoutMs);
        emptied = undefined;
        if (drained === 'timeout')
          logger.warn({ drainTimeoutMs }, 'drain timeout: replies still queued are dropped');
      }
      stopped = true;
      clearInterval(poller);
      unsubscribe?.();
      await Promise.allSettled([...claimLoops]);
      const sends = [...inFlight.values()].flatMap((set) => [...set]);
      const leftMs = deadline - Date.now();
      if (
        sends.length > 0 &&
        (leftMs <= 0 || (await within(Promise.allSettled(sends), leftMs)) === 'timeout')
      ) {
        leftBehind = true;
        logger.warn({ sending: sends.length }, 'drain timeout: sends still under way are left behind');
      }
    },

    async dropUnsent() {
      if (outbox.durable) return;
      for (const channel of await channelsWithWork()) {
        for (const delivery of await outbox.list(channel)) {
          for (const dropped of droppedOf(delivery)) outcomes.record(dropped);
        }
      }
    },
  };
}
