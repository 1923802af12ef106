import type { ChannelEvents, EventOrigin } from '@switchboard/channel-openapi';
import type { Delivery, Outcome, OutcomeBus, QueryPool, ReplicaEvents, TurnStart } from '@switchboard/core';

/** The engine's events, fanned out to the channels that follow them. */
export interface ChannelEventFanOut {
  /** What the channels follow (`createChannels`). */
  events: ChannelEvents;
  /** The controller's `turnStarted`: tells the channels, and the other replicas that follow its messages. */
  turnStarted(turn: TurnStart): void;
  /** The controller's `repliesStored`: tells the channels. */
  repliesStored(delivery: Delivery): void;
}

export interface ChannelEventFanOutOptions {
  outcomes: OutcomeBus;
  /** The other replicas sharing the pool (`Stores.replicaEvents`); null for a pool of one process. */
  replicas: ReplicaEvents | null;
  pool: QueryPool;
  /** Whether the final statuses join the commit that ends a message (`Stores.recordsShareOutboxCommit`). */
  recordsShareOutboxCommit: boolean;
  /** Where a channel's outcome listener that throws is reported (the bus's own report). */
  onListenerError(error: unknown): void;
}

/** Listeners filed by the channel whose events they need (`ALL`: every channel's). */
class ListenersByChannel<Listener> {
  static readonly ALL = '';
  readonly #byChannel = new Map<string, Set<Listener>>();

  get size(): number {
    let size = 0;
    for (const listeners of this.#byChannel.values()) size += listeners.size;
    return size;
  }

  /** Files `listener` under `channel` (none: every channel); returns its removal. */
  add(listener: Listener, channel = ListenersByChannel.ALL): () => void {
    let listeners = this.#byChannel.get(channel);
    if (listeners === undefined) {
      listeners = new Set();
      this.#byChannel.set(channel, listeners);
    }
    listeners.add(listener);
    return () => {
      // Called twice, it must not drop the set a later listener of the channel was added to.
      if (!listeners.delete(listener)) return;
      if (listeners.size === 0 && this.#byChannel.get(channel) === listeners) this.#byChannel.delete(channel);
    };
  }

  /** The listeners of the events of `channels`: each once, those of every channel included. */
  *of(channels: Iterable<string>): Generator<Listener> {
    const seen = new Set<string>();
    for (const channel of channels) {
      if (seen.has(channel)) continue;
      seen.add(channel);
      yield* this.#byChannel.get(channel) ?? [];
    }
    yield* this.#byChannel.get(ListenersByChannel.ALL) ?? [];
  }
}

type OutcomeListener = Parameters<ChannelEvents['subscribeOutcomes']>[0];

/** One unsubscribe for several subscriptions; the absent ones are skipped. */
function unsubscribeAll(...stops: Array<(() => unknown) | undefined>): () => void {
  return () => {
    for (const stop of stops) stop?.();
  };
}

/**
 * Hands the channels this replica's outcomes, turn starts and stored replies, and with a shared
 * pool the outcomes and turn starts other replicas address to this one, marked `relayed`: another
 * replica may run the turn of a message this one accepted (docs/design.md §5 "Several replicas").
 * The others' outcomes never reach the local bus: the audit log and metrics count an outcome once,
 * on the replica that recorded it.
 */
export function fanOutChannelEvents(options: ChannelEventFanOutOptions): ChannelEventFanOut {
  const { outcomes, replicas, pool } = options;
  // Filed by channel: each event calls the listeners of its channels only, not every channel's.
  const outcomeListeners = new ListenersByChannel<OutcomeListener>();
  const turnStartListeners = new ListenersByChannel<(turn: TurnStart, origin: EventOrigin) => void>();
  const repliesStoredListeners = new ListenersByChannel<(delivery: Delivery) => void>();

  /**
   * The bus's one listener for the channels': what each listener of the outcome's channel returns
   * comes back to the bus as one promise (false when any write did not land), so the outcome
   * counts as recorded once they all have (`OutcomeListener`).
   */
  const toChannels = (outcome: Outcome, committed?: Promise<boolean>): unknown => {
    const writes: Promise<unknown>[] = [];
    for (const listener of outcomeListeners.of([outcome.message.channel])) {
      // As separate subscribers of the bus: a listener that throws is reported and makes no
      // write, and the others' writes are still waited for.
      try {
        const write = listener(outcome, 'local', committed);
        if (write instanceof Promise) writes.push(write);
      } catch (error) {
        options.onListenerError(error);
      }
    }
    if (writes.length === 0) return undefined;
    if (writes.length === 1) return writes[0];
    return Promise.all(writes).then((landed) => landed.every((done) => done !== false));
  };
  let fromBus: (() => void) | undefined;

  const events: ChannelEvents = {
    subscribeOutcomes: (listener, channel) => {
      // In the outbox's file, the final status joins the commit that ends the message;
      // elsewhere it is written once that commit succeeded.
      fromBus ??= outcomes.subscribe(toChannels, {
        stores: options.recordsShareOutboxCommit,
        records: true,
      });
      const remove = outcomeListeners.add(listener, channel);
      return unsubscribeAll(
        () => {
          remove();
          if (outcomeListeners.size > 0) return;
          fromBus?.();
          fromBus = undefined;
        },
        replicas?.subscribeOutcomes((outcome) => listener(outcome, 'relayed')),
      );
    },
    subscribeRepliesStored: (listener, channel) => repliesStoredListeners.add(listener, channel),
    subscribeTurnStarts: (listener, channel) =>
      unsubscribeAll(
        turnStartListeners.add(listener, channel),
        replicas?.subscribeTurnStarts((turn) => listener(turn, 'relayed')),
      ),
    ...(replicas === null
      ? {}
      : {
          replicaId: replicas.replicaId,
          shareOutcome: (outcome: Outcome) => {
            const to = outcome.message.accepted_by;
            if (to !== undefined) replicas.publishOutcome(to, outcome);
          },
          shareReplies: replicas.publishReplies,
          followSession: replicas.followSession,
        }),
    ...(pool.locate === undefined ? {} : { locate: pool.locate.bind(pool) }),
  };

  return {
    events,
    turnStarted(turn) {
      const channels = turn.messages.map(({ message }) => message.channel);
      for (const listener of turnStartListeners.of(channels)) listener(turn, 'local');
      if (replicas === null) return;
      // Once per replica following some of its messages: a merged burst may hold several's.
      const followers = new Set<string>();
      for (const { message } of turn.messages)
        if (message.accepted_by !== undefined) followers.add(message.accepted_by);
      for (const to of followers) replicas.publishTurnStart(to, turn);
    },
    repliesStored(delivery) {
      for (const listener of repliesStoredListeners.of([delivery.channel])) listener(delivery);
    },
  };
}
