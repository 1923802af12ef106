import type { ChannelEvents, EventOrigin } from '@switchboard/channel-openapi';
import type { Delivery, OutcomeBus, QueryPool, ReplicaEvents, TurnStart } from '@switchboard/core';

/** The engine's events, fanned out to the channels that follow them. */
export interface ChannelEventFanOut {
  /** What the channels follow (`createChannels`). */
  events: ChannelEvents;
  /** The controller's `turnStarted`: tells the channels, and the other replicas when they follow it. */
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
  /** The ids of the HTTP channels: only their trackers follow turns across replicas. */
  httpChannels: Pick<ReadonlySet<string>, 'has'>;
}

/** One unsubscribe for several subscriptions; the absent ones are skipped. */
function unsubscribeAll(...stops: Array<(() => unknown) | undefined>): () => void {
  return () => {
    for (const stop of stops) stop?.();
  };
}

/**
 * Hands the channels this replica's outcomes, turn starts and stored replies, and with a shared
 * pool the other replicas' outcomes and turn starts too, marked `relayed`: another replica may run
 * the turn of a message this one accepted (docs/design.md §5 "Several replicas"). The others'
 * outcomes never reach the local bus: the audit log and metrics count an outcome once, on the
 * replica that recorded it.
 */
export function fanOutChannelEvents(options: ChannelEventFanOutOptions): ChannelEventFanOut {
  const { outcomes, replicas, pool, httpChannels } = options;
  const turnStartListeners = new Set<(turn: TurnStart, origin: EventOrigin) => void>();
  const repliesStoredListeners = new Set<(delivery: Delivery) => void>();

  const events: ChannelEvents = {
    subscribeOutcomes: (listener) =>
      unsubscribeAll(
        // In the outbox's file, the final status joins the commit that ends the message;
        // elsewhere it is written once that commit succeeded.
        outcomes.subscribe((outcome, committed) => listener(outcome, 'local', committed), {
          stores: options.recordsShareOutboxCommit,
          records: true,
        }),
        replicas?.subscribeOutcomes((outcome) => listener(outcome, 'relayed')),
      ),
    subscribeRepliesStored: (listener) => {
      repliesStoredListeners.add(listener);
      return () => repliesStoredListeners.delete(listener);
    },
    subscribeTurnStarts: (listener) => {
      turnStartListeners.add(listener);
      return unsubscribeAll(
        () => turnStartListeners.delete(listener),
        replicas?.subscribeTurnStarts((turn) => listener(turn, 'relayed')),
      );
    },
    ...(replicas === null
      ? {}
      : {
          shareOutcome: replicas.publishOutcome,
          shareReplies: replicas.publishReplies,
          followSession: replicas.followSession,
        }),
    ...(pool.locate === undefined ? {} : { locate: pool.locate.bind(pool) }),
  };

  return {
    events,
    turnStarted(turn) {
      for (const listener of turnStartListeners) listener(turn, 'local');
      if (replicas !== null && turn.messages.some(({ message }) => httpChannels.has(message.channel)))
        replicas.publishTurnStart(turn);
    },
    repliesStored(delivery) {
      for (const listener of repliesStoredListeners) listener(delivery);
    },
  };
}
