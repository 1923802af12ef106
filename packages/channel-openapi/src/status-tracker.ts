import { setMaxListeners } from 'node:events';
import {
  type Delivery,
  type Logger,
  type MessageStatus,
  type MessageStatusStore,
  type Outcome,
  type PooledMessageState,
  type Reply,
  type SessionReplies,
  type TurnStart,
  isFinalStatus,
  traceIdOf,
} from '@switchboard/core';
import { createKeyedSerializer } from './keyed-serializer.js';

/**
 * Where an engine event happened: on this replica (`local`, the default when a listener is called
 * without one), or on another replica sharing its pool (`relayed`, docs/design.md §5 "Several
 * replicas").
 */
export type EventOrigin = 'local' | 'relayed';

/**
 * The engine events the channel follows; the app wires them to the outcome bus and controller,
 * and with a shared pool to the other replicas' events too.
 */
export interface ChannelEvents {
  /**
   * Calls `listener` with every final outcome; returns the function that unsubscribes. Where the
   * statuses share the commit of the write ending a local outcome, the outcome comes with
   * `committed` (`OutcomeSink.record`), in the tick of that write, so that the final status joins
   * its commit. For a local outcome of this channel the listener returns whether its final status
   * was written (`OutcomeListener`).
   */
  subscribeOutcomes(
    listener: (outcome: Outcome, origin?: EventOrigin, committed?: Promise<boolean>) => unknown,
  ): () => void;
  /** Calls `listener` whenever a turn starts (again, for a retry); returns the unsubscribe. */
  subscribeTurnStarts(listener: (turn: TurnStart, origin?: EventOrigin) => void): () => void;
  /**
   * Calls `listener` when a turn's replies were stored in the outbox and the turn completed: its
   * messages are answered, their replies on their way. Returns the unsubscribe.
   */
  subscribeRepliesStored?(listener: (delivery: Delivery) => void): () => void;
  /**
   * With a shared pool: hands a local outcome of this channel to the other replicas. The tracker
   * calls it once the final status write has landed (or failed), so that a replica answered by
   * it and asked again reads the status from the store.
   */
  shareOutcome?(outcome: Outcome): void;
  /**
   * With a shared pool: where a message another replica accepted stands (`QueryPool.locate`), so
   * that it reads queued or running here too, and never 404 before its final status is stored.
   */
  locate?(messageId: string): Promise<PooledMessageState | null>;
  /** With a shared pool: hands replies sent here to the event streams other replicas hold. */
  shareReplies?(replies: SessionReplies): void;
  /**
   * With a shared pool: calls `listener` with the replies other replicas send to one session of
   * this channel until the returned function is called.
   */
  followSession?(channel: string, session: string, listener: (replies: SessionReplies) => void): () => void;
}

/** Where a message was routed, as its `queued` status records it. */
export interface QueuedFields {
  pipeline: string;
  rule: string | null;
  traceId: string | null;
  /** `InboundMessage.generation`: how many dead-letter replays came before. Default 0. */
  generation?: number;
}

/** A final status, with the outcome's reason when the answer is given as it happens. */
export interface FinalStatus {
  status: MessageStatus;
  reason?: string;
}

/** Interest in one message's final status, registered before it is accepted. */
export interface StatusWatch {
  /**
   * The final status, or null when `timeoutMs` passes first or the channel drains (see
   * `StatusTracker.drain`). Ends the watch either way.
   */
  wait(timeoutMs: number): Promise<FinalStatus | null>;
  /** Ends the watch without waiting. */
  cancel(): void;
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
}

/** Followed messages one sweep checks at most (two reads each). */
const SWEEP_PER_ROUND = 100;

/** Where the replies of a message with this outcome stand. */
function deliveryAfter(outcome: Outcome, base: MessageStatus): MessageStatus['delivery'] {
  if (outcome.kind === 'completed') return (outcome.replies?.length ?? 0) > 0 ? 'delivered' : null;
  // Given up by the outbox (a dead letter), or left in it at shutdown.
  if (outcome.reason === 'delivery_failed' || base.delivery === 'pending') return 'failed';
  return base.delivery ?? null;
}

/** A message of `channel` known to be accepted, nothing more: queued, with no route yet. */
export function emptyStatus(id: string, channel: string, updatedAt: number, generation = 0): MessageStatus {
  return {
    id,
    channel,
    generation,
    status: 'queued',
    pipeline: null,
    rule: null,
    turn: null,
    replies: [],
    delivery: null,
    error: null,
    trace_id: null,
    updated_at: updatedAt,
  };
}

/**
 * The replies a dead letter's outcome carries: the pipeline's `dead_letter_reply`, on its way
 * through the outbox to the first message of the turn (core `turn-settlement.ts`). Every writer of
 * the final status — the settling replica, the one recovering a kept outcome — writes them, so
 * that the status holds them whichever of its writes and the reply's send lands first.
 */
function deadLetterRepliesOf(outcome: Outcome): readonly Reply[] {
  const apology =
    outcome.kind === 'dead_lettered' &&
    (outcome.reason === 'fatal_error' || outcome.reason === 'max_attempts');
  return apology ? (outcome.replies ?? []) : [];
}

/**
 * `held` with `replies` added after it, unless it already ends with them: a dead-letter reply
 * reaches a status twice, from its outcome and from its send, in either order (and twice from
 * its send where a crash repeats it), and shows once. Replies carry no id; the same replies at
 * the tail are the same send. Returns `held` itself when nothing is added.
 */
function withNewReplies(held: readonly Reply[], replies: readonly Reply[]): readonly Reply[] {
  if (replies.length === 0) return held;
  if (replies.length <= held.length) {
    const tail = held.slice(held.length - replies.length);
    if (JSON.stringify(tail) === JSON.stringify(replies)) return held;
  }
  return [...held, ...replies];
}

function finalStatus(outcome: Outcome, current: MessageStatus | null, at: number): MessageStatus {
  const { message } = outcome;
  const base = current ?? emptyStatus(message.id, message.channel, at);
  const failed = outcome.kind === 'dropped' || outcome.kind === 'dead_lettered';
  const error = outcome.error === undefined ? null : `${outcome.error.code}: ${outcome.error.message}`;
  return {
    id: message.id,
    channel: message.channel,
    generation: message.generation ?? 0,
    status: outcome.kind,
    pipeline: outcome.pipeline ?? base.pipeline,
    rule: outcome.rule ?? base.rule,
    turn: outcome.turnId ?? base.turn,
    // The outcome carries the turn's replies, which `send` already appended for the first message.
    replies:
      outcome.kind === 'completed'
        ? (outcome.replies ?? base.replies)
        : [...withNewReplies(base.replies, deadLetterRepliesOf(outcome))],
    delivery: deliveryAfter(outcome, base),
    // Without an error, the reason (queue_overflow, shutdown…) is the only account of a failure.
    error: error ?? (failed ? (outcome.reason ?? null) : null),
    trace_id: traceIdOf(outcome.message.traceparent) ?? base.trace_id ?? null,
    updated_at: at,
  };
}

/** `status` with `replies` appended (`withNewReplies`), or null when it holds them already. */
function withReplies(status: MessageStatus, replies: readonly Reply[], at: number): MessageStatus | null {
  const held = withNewReplies(status.replies, replies);
  return held === status.replies ? null : { ...status, replies: [...held], updated_at: at };
}

/** What the tracker holds for one message while anything still needs it in memory. */
interface Tracked {
  /** The latest status; null while a request watches a message not accepted yet. */
  status: MessageStatus | null;
  /** Requests waiting for the final status. */
  waiters: Array<(final: FinalStatus | null) => void>;
  /** Settles once the message's last store write so far has landed; undefined when none is under way. */
  writing: Promise<void> | undefined;
  /** Another replica's outcome for it arrived: its final status is that replica's to write. */
  endedElsewhere: boolean;
}

/** A request's interest in one message; `wait` and `cancel` both end it. */
class Watch implements StatusWatch {
  readonly #entry: Tracked;
  readonly #release: () => void;
  readonly #drained: AbortSignal;
  readonly #final: Promise<FinalStatus | null>;
  #settle: ((final: FinalStatus | null) => void) | undefined;

  constructor(entry: Tracked, release: () => void, drained: AbortSignal) {
    this.#entry = entry;
    this.#release = release;
    this.#drained = drained;
    this.#final = new Promise((resolve) => {
      this.#settle = resolve;
      entry.waiters.push(resolve);
    });
  }

  async wait(timeoutMs: number): Promise<FinalStatus | null> {
    const end = () => this.cancel();
    const timer = setTimeout(end, timeoutMs);
    this.#drained.addEventListener('abort', end);
    if (this.#drained.aborted) end();
    try {
      return await this.#final;
    } finally {
      clearTimeout(timer);
      this.#drained.removeEventListener('abort', end);
      this.cancel();
    }
  }

  cancel(): void {
    const settle = this.#settle;
    if (settle === undefined) return;
    this.#settle = undefined;
    const { waiters } = this.#entry;
    const at = waiters.indexOf(settle);
    if (at >= 0) waiters.splice(at, 1);
    settle(null);
    this.#release();
  }
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
 */
export function createStatusTracker(options: StatusTrackerOptions): StatusTracker {
  const { channelId, statuses } = options;
  const now = options.now ?? Date.now;
  const log = options.logger;
  // Orders the rare read-change-write of a message known only to the store (a dead letter reply
  // after the status was written and forgotten). A followed message's writes chain on its entry.
  const storeOnly = createKeyedSerializer();
  const tracked = new Map<string, Tracked>();
  // Waits end on drain, not watches: a watch also keeps an outcome that beat `queued` in memory,
  // and a request admitted as the drain began still needs that.
  const drained = new AbortController();
  // One listener per waiting request: up to max_concurrent_requests, past Node's warning at 10.
  setMaxListeners(0, drained.signal);

  function entryOf(id: string): Tracked {
    let entry = tracked.get(id);
    if (entry === undefined) {
      entry = { status: null, waiters: [], writing: undefined, endedElsewhere: false };
      tracked.set(id, entry);
    }
    return entry;
  }

  /** Forgets `id` once nothing needs it in memory any more. */
  function release(id: string, entry: Tracked): void {
    const settled = entry.status === null || isFinalStatus(entry.status);
    if (settled && entry.waiters.length === 0 && entry.writing === undefined && tracked.get(id) === entry)
      tracked.delete(id);
  }

  /**
   * Writes `status` after the message's earlier writes, so the store ends with the latest one.
   * `joining` the commit that ends the message, it is written at once instead, so that it joins
   * that commit: the store is then the outbox's SQLite file, whose group commit applies writes in
   * the order they are issued.
   */
  function write(id: string, entry: Tracked, status: MessageStatus, joining = false): Promise<void> {
    const previous = entry.writing;
    const written =
      previous === undefined || joining ? statuses.put(status) : previous.then(() => statuses.put(status));
    const landed = () => {
      if (entry.writing !== tail) return;
      entry.writing = undefined;
      release(id, entry);
    };
    const both = previous === undefined || !joining ? written : Promise.allSettled([previous, written]);
    const tail: Promise<void> = both.then(landed, landed);
    entry.writing = tail;
    return written;
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

  function trackQueued(id: string, entry: Tracked, fields: QueuedFields): void {
    entry.status = {
      ...emptyStatus(id, channelId, now(), fields.generation),
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
      onRelayedOutcome(id, outcome);
      return undefined;
    }
    const entry = entryOf(id);
    const status = finalStatus(outcome, entry.status, now());
    if (committed === undefined) entry.status = status;
    const written = write(id, entry, status, committed !== undefined).then(
      () => true,
      (err: unknown) => {
        log.error({ err, messageId: id, outcome: outcome.kind }, 'status update failed');
        return false;
      },
    );
    const ended = committed === undefined ? Promise.resolve(true) : committed.catch(() => false);
    Promise.all([ended, written]).then(([done]) => {
      if (!done) return;
      if (committed !== undefined) entry.status = status;
      answerSoon(notifier(id, entry, status, outcome.reason));
      options.events.shareOutcome?.(outcome);
    });
    return written;
  }

  /**
   * Another replica's outcome answers this replica's waiting requests, only for messages followed
   * here, and is not written: the replica that recorded it writes the final status, with the
   * replies its `send` appended, which this one never saw (docs/design.md §5 "Several replicas").
   * That status was stored before the outcome was relayed, so the answer is read from the store;
   * the outcome's own account only stands in when the store fails to answer.
   *
   * With a shared reply outbox, the replica that ran the turn writes `delivery: pending` when its
   * replies are stored, while another replica's sender may already be delivering them. The store
   * keeps a final status over a later pending one, but that replica's final write may have
   * failed. So the store is read once this replica's writes have landed, and the final status is
   * written again from the outcome when the store holds this replica's pending one.
   */
  function onRelayedOutcome(id: string, outcome: Outcome): void {
    const entry = tracked.get(id);
    if (entry === undefined || (entry.status !== null && isFinalStatus(entry.status))) return;
    entry.endedElsewhere = true;
    const told = finalStatus(outcome, entry.status, now());
    const wrotePending = entry.status?.delivery === 'pending';
    const landed = entry.writing ?? Promise.resolve();
    landed
      .then(() => storedOwn(id))
      .then(
        (stored) => {
          if (stored !== null && isFinalStatus(stored)) {
            settleFollowed(id, entry, stored, outcome.reason);
            return;
          }
          if (wrotePending)
            write(id, entry, told).catch((err: unknown) =>
              log.error({ err, messageId: id, outcome: outcome.kind }, 'status update failed'),
            );
          settleFollowed(id, entry, told, outcome.reason);
        },
        () => settleFollowed(id, entry, told, outcome.reason),
      );
  }

  /** A followed message turned out final elsewhere: answers its waiters and lets it go. */
  function settleFollowed(id: string, entry: Tracked, status: MessageStatus, reason?: string): void {
    if (entry.status !== null && isFinalStatus(entry.status)) return;
    entry.status = status;
    answerSoon(notifier(id, entry, status, reason));
  }

  function notifier(id: string, entry: Tracked, status: MessageStatus, reason?: string): () => void {
    return () => {
      // A waiting caller gets its answer even when the store refused the write.
      const final = { status, reason };
      // Watches end themselves (wait, cancel): until then the final status stays in memory.
      for (const settle of entry.waiters) settle(final);
      release(id, entry);
    };
  }

  // Answers leave together at the end of the event-loop turn, not one by one as turns end: the
  // requests read in one turn are all handled before the first answer is written, and a client
  // waiting on many connections is woken once per burst of writes instead of once per answer.
  // In the HTTP benchmark that took the gateway from ~13k to 17–19k req/s
  // (bench/HISTORY.md#tuning-pass-3-answers-and-metrics).
  let answers: Array<() => void> = [];

  function answerSoon(answer: () => void): void {
    if (answers.push(answer) === 1) setImmediate(answerAll);
  }

  function answerAll(): void {
    const due = answers;
    answers = [];
    for (const answer of due) answer();
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
        ...(entry.status ?? emptyStatus(message.id, channelId, at)),
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
   * its delivery `pending` until the outbox delivers them or gives up. Written to the store, so
   * that it is known after a restart while the outbox still holds its replies. A message no
   * longer followed is final already (its delivery beat this event), and is left alone, as is one
   * another replica's sender told the outcome of. The final status, written when their delivery
   * ended (maybe by another replica, before this event, whatever its clock says), is of a later
   * stage, and the store keeps it (`statusVersion`; a non-final status never replaces a final one).
   */
  function onRepliesStored(delivery: Delivery): void {
    if (delivery.channel !== channelId) return;
    const at = now();
    for (const answered of delivery.messages) {
      const id = answered.message.id;
      const entry = tracked.get(id);
      if (
        entry === undefined ||
        entry.endedElsewhere ||
        (entry.status !== null && isFinalStatus(entry.status))
      )
        continue;
      const status: MessageStatus = {
        ...(entry.status ?? emptyStatus(id, channelId, at)),
        generation: answered.message.generation ?? 0,
        status: 'completed',
        pipeline: answered.pipeline,
        rule: answered.rule ?? null,
        turn: delivery.turnId,
        delivery: 'pending',
        updated_at: delivery.createdAt,
      };
      entry.status = status;
      write(id, entry, status).catch((err: unknown) =>
        log.error({ err, messageId: id }, 'status update failed'),
      );
    }
  }

  /**
   * A followed message still queued or running here, with a shared pool: another replica may have
   * ended it while its relayed outcome was lost (pub/sub is at most once), so the store decides.
   */
  async function checkedElsewhere(id: string, entry: Tracked, status: MessageStatus): Promise<MessageStatus> {
    const stored = await storedOwn(id);
    if (stored === null || !isFinalStatus(stored)) return entry.status ?? status;
    settleFollowed(id, entry, stored);
    return stored;
  }

  /**
   * With a shared pool, every `sweepEveryMs`: followed messages not final after `staleAfterMs` whose
   * outcome this replica may never hear of (a lost relayed event, a turn whose lease it lost).
   * Those final in the store are settled; those the pool no longer holds, with no status stored,
   * are let go — nothing here would ever end them.
   */
  async function sweepStale(): Promise<void> {
    const before = now() - (options.staleAfterMs ?? 60_000);
    const stale = [...tracked]
      .filter(
        ([, entry]) =>
          entry.status !== null && !isFinalStatus(entry.status) && entry.status.updated_at < before,
      )
      .slice(0, SWEEP_PER_ROUND);
    for (const [id, entry] of stale) {
      const status = entry.status as MessageStatus;
      if (isFinalStatus(await checkedElsewhere(id, entry, status))) continue;
      if (
        (await options.events.locate?.(id)) === null &&
        entry.waiters.length === 0 &&
        tracked.get(id) === entry
      )
        tracked.delete(id);
    }
  }
  const sweeper =
    options.events.locate === undefined
      ? undefined
      : setInterval(() => {
          sweepStale().catch((err: unknown) => log.warn({ err }, 'status sweep failed: retrying'));
        }, options.sweepEveryMs ?? 30_000);
  sweeper?.unref();

  /**
   * A message not followed here and not in the store: where the shared pool says it stands, if
   * it is of this channel.
   */
  async function elsewhere(id: string): Promise<MessageStatus | null> {
    const pooled = (await options.events.locate?.(id)) ?? null;
    if (pooled === null || pooled.channel !== channelId) return null;
    if (pooled.state === 'settled') {
      // Final, its status written by the replica that ran it: it reads as running until it lands.
      const stored = await storedOwn(id);
      if (stored !== null) return stored;
    }
    return {
      ...emptyStatus(id, channelId, now()),
      status: pooled.state === 'queued' ? 'queued' : 'running',
      pipeline: pooled.pipeline,
      rule: pooled.rule,
    };
  }

  const unsubscribe = [
    options.events.subscribeOutcomes(onOutcome),
    options.events.subscribeTurnStarts(onTurnStart),
    options.events.subscribeRepliesStored?.(onRepliesStored),
  ];

  return {
    watch(id) {
      const entry = entryOf(id);
      return new Watch(entry, () => release(id, entry), drained.signal);
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
        // A dead-letter reply: its final status carries it too (`deadLetterRepliesOf`), so one
        // not stored yet gets it from its writer, and one stored holds it already.
        return storeOnly.run(id, async () => {
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
      if (
        status !== null &&
        entry !== undefined &&
        !isFinalStatus(status) &&
        options.events.locate !== undefined
      )
        return checkedElsewhere(id, entry, status);
      if (status !== null) return status;
      await storeOnly.idle(id);
      const stored = await storedOwn(id);
      return stored === null ? elsewhere(id) : stored;
    },

    drain() {
      drained.abort();
    },

    close() {
      clearInterval(sweeper);
      for (const stop of unsubscribe) stop?.();
    },
  };
}
