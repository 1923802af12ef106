import {
  type Delivery,
  type Logger,
  type MessageStatus,
  type MessageStatusStore,
  type Outcome,
  type Reply,
  type TurnStart,
  isFinalStatus,
} from '@switchboard/core';
import type { ChannelEvents, EventOrigin } from './channel-events.js';
import { createReplicaReconciliation } from './replica-reconciliation.js';
import { answeredStatus, emptyStatus, finalStatus, withReplies } from './status-from-outcome.js';
import { type StatusWatch, createStatusWaiters } from './status-waiters.js';
import { createStatusWriteOrder } from './status-write-order.js';
import type { TrackedMessage } from './tracked-message.js';

/** Where a message was routed, as its `queued` status records it. */
export interface QueuedFields {
  pipeline: string;
  rule: string | null;
  traceId: string | null;
  /** `InboundMessage.tenant`, as ingress stamped it (absent for `default`). */
  tenant?: string;
  /** `InboundMessage.generation`: how many dead-letter replays came before. Default 0. */
  generation?: number;
}

/**
 * Keeps the status of this channel's messages current — queued on acceptance, running when a turn
 * starts, in memory; final on the outcome, in the store and in memory (with `committed`, in
 * memory once the commit ending the message succeeded) — and tells waiting requests when a
 * message is final.
 */
export interface StatusTracker {
  /** Watches `id`; call before `ingress.accept`, so that a fast pipeline cannot finish unseen. */
  watch(id: string): StatusWatch;
  /**
   * Watches `id`, accepted before (a repeated keyed request). With a shared pool, when this
   * replica does not follow it, the replica that accepted it alone hears its outcome
   * (docs/design.md §5 "Several replicas"): its stored status is read while the watch lasts.
   */
  watchAccepted(id: string): StatusWatch;
  /**
   * Records `queued`, unless a turn start or the outcome got there first. Call it while watching
   * `id`: the watch keeps an outcome that beat it in memory.
   */
  queued(id: string, fields: QueuedFields): void;
  /**
   * Follows a message recovered from the journal after a restart until its outcome: its stored
   * status, or `queued` when the stop came before its final status was written.
   */
  recovered(id: string, fields: QueuedFields): Promise<void>;
  /**
   * Appends replies sent for `id`, unless its status already ends with them (a dead-letter reply
   * its final status carried, a send repeated after a crash); returns the updated status, or null
   * when `id` is unknown. For a message not followed here (or only watched, not accepted yet),
   * `answer` replies (the turn's, carried by the outcome that follows: its final status has them)
   * are not stored: returns null without reading the store.
   */
  appendReplies(id: string, replies: readonly Reply[], answer?: boolean): Promise<MessageStatus | null>;
  /** The latest status: from memory while the message is followed, else from the store. */
  current(id: string): Promise<MessageStatus | null>;
  /**
   * Shutdown began: every `wait` under way and to come returns null at once. A waiting request
   * held its connection until its own timeout (up to `max_wait_timeout`), and with it the
   * shutdown past the container's stop grace; answered 202 now, the client asks again with GET.
   */
  drain(): void;
  /** Stops following the engine events. */
  close(): void;
}

export interface StatusTrackerOptions {
  channelId: string;
  statuses: MessageStatusStore;
  events: ChannelEvents;
  logger: Logger;
  now?: () => number;
  /** With `events.locate`: how often followed messages are checked for a lost outcome. Default 30 s. */
  sweepEveryMs?: number;
  /** With `events.locate`: a followed message not final this long (ms) is checked. Default 60 s. */
  staleAfterMs?: number;
  /**
   * With `events.locate`: how often a message another replica accepted is read from the store
   * while a request waits on it here (`watchAccepted`). Default 1 s.
   */
  checkElsewhereEveryMs?: number;
}

/**
 * Creates the tracker and subscribes it to `events` at once, so that no outcome of a message
 * accepted through this channel is missed, even while the channel is stopped and the engine
 * drains.
 *
 * Statuses change in memory, synchronously, in the order the events arrive; the store is written
 * when a message is final. Until then a restart learns of the message from the journal, which
 * holds it until its outcome, and follows it again (`recovered`): writing `queued` as well put a
 * second status write on every message's path
 * (bench/HISTORY.md#tuning-pass-4-counted-costs). A message stays in memory
 * until it is final, its writes have landed and nobody watches it — so a late `queued` always
 * finds the outcome that beat it, without reading the store.
 *
 * Its parts: `status-from-outcome.ts` derives the statuses, `status-waiters.ts` answers the
 * waiting requests, `status-write-order.ts` orders the store writes of each message, and
 * `replica-reconciliation.ts` agrees with the other replicas sharing the pool.
 */
export function createStatusTracker(options: StatusTrackerOptions): StatusTracker {
  const { channelId, statuses, events } = options;
  const now = options.now ?? Date.now;
  const log = options.logger;
  const tracked = new Map<string, TrackedMessage>();
  const waiters = createStatusWaiters();
  const writes = createStatusWriteOrder(statuses);

  function entryOf(id: string): TrackedMessage {
    let entry = tracked.get(id);
    if (entry === undefined) {
      entry = { status: null, waiters: [], writing: undefined, endedElsewhere: false };
      tracked.set(id, entry);
    }
    return entry;
  }

  /** Forgets `id` once nothing needs it in memory any more. */
  function release(id: string, entry: TrackedMessage): void {
    const settled = entry.status === null || isFinalStatus(entry.status);
    if (settled && entry.waiters.length === 0 && entry.writing === undefined && tracked.get(id) === entry)
      tracked.delete(id);
  }

  function write(id: string, entry: TrackedMessage, status: MessageStatus, joining = false): Promise<void> {
    return writes.write(entry, status, joining, () => release(id, entry));
  }

  /** Answers the requests waiting on `id` with its final `status`, then lets it go if it can. */
  function answerWaiters(id: string, entry: TrackedMessage, status: MessageStatus, reason?: string): void {
    // A waiting caller gets its answer even when the store refused the write.
    waiters.answerSoon(entry, { status, reason }, () => release(id, entry));
  }

  /**
   * The status of `id` the store holds, if it is of this channel: a channel answers only for its
   * own messages, and another's reads as unknown (null), so that nothing of it leaks. Every read
   * of the store goes through here: PostgreSQL's status, or the audit outbox's waiting copy.
   */
  async function storedOwn(id: string): Promise<MessageStatus | null> {
    const stored = await statuses.get(id);
    return stored?.channel === channelId ? stored : null;
  }

  const replicas = createReplicaReconciliation({
    channelId,
    followed: tracked,
    locate: events.locate,
    stored: storedOwn,
    write,
    answer: answerWaiters,
    now,
    logger: log,
    sweepEveryMs: options.sweepEveryMs,
    staleAfterMs: options.staleAfterMs,
    checkElsewhereEveryMs: options.checkElsewhereEveryMs,
  });

  function trackQueued(id: string, entry: TrackedMessage, fields: QueuedFields): void {
    entry.status = {
      ...emptyStatus(id, channelId, fields.tenant, now(), fields.generation),
      pipeline: fields.pipeline,
      rule: fields.rule,
      trace_id: fields.traceId,
    };
  }

  /**
   * A local outcome: its final status is written at once and answered once written (a waiting
   * caller gets its answer even when the store refused the write). With `committed`, the status
   * is final here only once the commit that ends the message succeeded too: when it fails, the
   * message is not over — its settlement is written again and its outcome recorded again.
   */
  function onOutcome(
    outcome: Outcome,
    origin: EventOrigin = 'local',
    committed?: Promise<boolean>,
  ): Promise<boolean> | undefined {
    const id = outcome.message.id;
    if (outcome.message.channel !== channelId || outcome.kind === 'duplicate') return undefined;
    if (origin === 'relayed') {
      replicas.relayedOutcome(id, outcome);
      return undefined;
    }
    const entry = entryOf(id);
    const status = finalStatus(outcome, entry.status, now());
    if (committed === undefined) entry.status = status;
    else entry.ending = true;
    const written = write(id, entry, status, committed !== undefined).then(
      () => true,
      (err: unknown) => {
        log.error({ err, messageId: id, outcome: outcome.kind }, 'status update failed');
        return false;
      },
    );
    const ended = committed === undefined ? Promise.resolve(true) : committed.catch(() => false);
    Promise.all([ended, written]).then(([done, wroteFinal]) => {
      if (committed !== undefined) {
        entry.ending = false;
        // A status skipped while the commit was under way is written after all when that commit,
        // or the final status in it, failed: the store must not be left with none.
        const skipped = entry.status;
        if (entry.skipped === true && skipped !== null && !(done && wroteFinal))
          write(id, entry, skipped).catch((err: unknown) =>
            log.error({ err, messageId: id }, 'status update failed'),
          );
        entry.skipped = false;
      }
      if (!done) return;
      if (committed !== undefined) entry.status = status;
      answerWaiters(id, entry, status, outcome.reason);
      events.shareOutcome?.(outcome);
    });
    return written;
  }

  function onTurnStart(turn: TurnStart, origin: EventOrigin = 'local'): void {
    const at = now();
    for (const queued of turn.messages) {
      const { message } = queued;
      if (message.channel !== channelId) continue;
      // Another replica's turn moves only messages followed here: an entry made for a message
      // nobody here follows would wait for an outcome this replica may never hear of.
      const entry = origin === 'relayed' ? tracked.get(message.id) : entryOf(message.id);
      if (entry === undefined || (entry.status !== null && isFinalStatus(entry.status))) continue;
      entry.status = {
        ...(entry.status ?? emptyStatus(message.id, channelId, message.tenant, at, message.generation)),
        status: 'running',
        pipeline: turn.pipeline,
        rule: queued.rule ?? null,
        turn: turn.id,
        updated_at: at,
      };
    }
  }

  /**
   * A followed message's replies were stored and its turn completed: it reads `completed` with
   * its delivery `pending`, and the replies, until the outbox delivers them or gives up. Written to the store, so
   * that it is known after a restart while the outbox still holds its replies. A message no
   * longer followed is final already (its delivery beat this event), and is left alone, as is one
   * another replica's sender told the outcome of. The final status, written when their delivery
   * ended (maybe by another replica, before this event, whatever its clock says), is of a later
   * stage, and the store keeps it (`statusVersion`; a non-final status never replaces a final one).
   */
  function onRepliesStored(delivery: Delivery): void {
    if (delivery.channel !== channelId) return;
    for (const answered of delivery.messages) {
      const id = answered.message.id;
      const entry = tracked.get(id);
      if (
        entry === undefined ||
        entry.endedElsewhere ||
        (entry.status !== null && isFinalStatus(entry.status))
      )
        continue;
      const status = answeredStatus(delivery, answered, entry.status);
      entry.status = status;
      // The delivery ended already (this process's outbox: its sender claims at once) and its
      // final status is being committed: written now, this one would only cost a commit of its
      // own, behind that one, for the store to refuse (a final status is never replaced).
      if (entry.ending === true) {
        entry.skipped = true;
        continue;
      }
      write(id, entry, status).catch((err: unknown) =>
        log.error({ err, messageId: id }, 'status update failed'),
      );
    }
  }

  const unsubscribe = [
    events.subscribeOutcomes(onOutcome, channelId),
    events.subscribeTurnStarts(onTurnStart, channelId),
    events.subscribeRepliesStored?.(onRepliesStored, channelId),
  ];

  return {
    watch(id) {
      const entry = entryOf(id);
      return waiters.watch(entry, () => release(id, entry));
    },

    watchAccepted(id) {
      const followedHere = (tracked.get(id)?.status ?? null) !== null;
      const entry = entryOf(id);
      const watch = waiters.watch(entry, () => release(id, entry));
      if (!followedHere) replicas.waitedElsewhere(id, entry);
      return watch;
    },

    queued(id, fields) {
      const entry = entryOf(id);
      if (entry.status === null) trackQueued(id, entry, fields);
    },

    async recovered(id, fields) {
      const stored = await storedOwn(id);
      const entry = entryOf(id);
      if (entry.status !== null) return;
      if (stored === null) {
        trackQueued(id, entry, fields);
      } else {
        // Followed as the stop left it, without writing it again.
        entry.status = stored;
        release(id, entry);
      }
    },

    async appendReplies(id, replies, answer = false) {
      const entry = tracked.get(id);
      const current = entry?.status ?? null;
      if (entry === undefined || current === null) {
        // Another replica ran the turn and follows the message. Reading the store here would make
        // the send, and the chat's later deliveries, wait on it: while PostgreSQL is away, for
        // the outbox's backoff after it is back.
        if (answer) return null;
        // A dead-letter reply: its final status carries it too (`status-from-outcome.ts`), so one
        // not stored yet gets it from its writer, and one stored holds it already.
        return writes.changeStored(id, async () => {
          const stored = await storedOwn(id);
          if (stored === null) return null;
          const updated = withReplies(stored, replies, now());
          if (updated === null) return stored;
          await statuses.put(updated);
          return updated;
        });
      }
      const updated = withReplies(current, replies, now());
      if (updated === null) return current;
      entry.status = updated;
      if (isFinalStatus(updated)) await write(id, entry, updated);
      return updated;
    },

    async current(id) {
      const entry = tracked.get(id);
      const status = entry?.status ?? null;
      if (status !== null && entry !== undefined && !isFinalStatus(status) && events.locate !== undefined)
        return replicas.checked(id, entry, status);
      if (status !== null) return status;
      await writes.idle(id);
      const stored = await storedOwn(id);
      return stored === null ? replicas.elsewhere(id) : stored;
    },

    drain() {
      waiters.drain();
    },

    close() {
      replicas.close();
      for (const stop of unsubscribe) stop?.();
    },
  };
}
