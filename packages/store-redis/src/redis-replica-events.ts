import {
  type Logger,
  type Outcome,
  type ReplicaEvents,
  type SessionReplies,
  type TurnStart,
  turnStartOf,
} from '@switchboard/core';
import {
  type RedisClient,
  type RedisTarget,
  connect,
  primaryOf,
  redisClientFactory,
  storeFailure,
} from './redis-connection.js';

/**
 * `ReplicaEvents` over Redis pub/sub (docs/design.md §5 "Several replicas"): outcomes and turn
 * starts on their addressee's channel (`eventChannelOf`), which only that replica subscribes to,
 * one session's replies on its own channel (`sessionChannelOf`), subscribed only while this
 * replica follows the session. Pub/sub delivers only to replicas subscribed at the time, in the
 * order the server took the publishes.
 */
export interface RedisReplicaEvents extends ReplicaEvents {
  /** Quits both connections (drops them at once when Redis is gone). */
  close(): Promise<void>;
}

export interface RedisReplicaEventsOptions {
  /** The pool's Redis, e.g. `redis://127.0.0.1:6379/0`; connected with `FAIL_FAST_OPTIONS`. */
  url: RedisTarget;
  /** The pool's prefix: replicas sharing a pool share its events. */
  prefix: string;
  /** This replica's id (the pool's `replicaId`): it hears the events addressed to it. */
  replicaId: string;
  logger: Logger;
  /** The wait reported in `SB_STORE_UNAVAILABLE` when Redis cannot be reached at start. Default: 1000 ms. */
  retryAfterMs?: number;
}

const DEFAULTS = { retryAfterMs: 1_000 } satisfies Partial<RedisReplicaEventsOptions>;

/** One event on a replica's channel. */
type RelayedEvent = { kind: 'outcome'; outcome: Outcome } | { kind: 'turn_start'; turn: TurnStart };

/**
 * The channel of the events addressed to one replica of a pool, in the pool's hash tag
 * (docs/design.md §5).
 */
export function eventChannelOf(prefix: string, replicaId: string): string {
  return `{${prefix}}:events:${replicaId}`;
}

/**
 * The channel of one session's replies: only replicas with an event stream on it subscribe.
 * Channel ids have no `:`, so the name is unambiguous.
 */
export function sessionChannelOf(prefix: string, channel: string, session: string): string {
  return `{${prefix}}:replies:${channel}:${session}`;
}

/**
 * Connects a publishing and a subscribed connection and subscribes to this replica's event
 * channel before it resolves; on failure leaves nothing open behind.
 */
export async function createRedisReplicaEvents(
  options: RedisReplicaEventsOptions,
): Promise<RedisReplicaEvents> {
  const { replicaId, logger } = options;
  const retryAfterMs = options.retryAfterMs ?? DEFAULTS.retryAfterMs;
  const createClient = redisClientFactory(options.url);
  const channel = eventChannelOf(options.prefix, replicaId);
  const publisher = createClient('commands');
  const subscriber = createClient('subscriber');
  // Losses are logged by the pool's own connections; these only must not crash the process.
  for (const connection of [publisher, subscriber]) connection.on('error', () => {});
  const outcomeListeners = new Set<(outcome: Outcome) => void>();
  const turnStartListeners = new Set<(turn: TurnStart) => void>();

  // Listeners per session channel; subscribed while the set is not empty.
  const sessionListeners = new Map<string, Set<(replies: SessionReplies) => void>>();

  subscriber.on('message', (from: string, text: string) => {
    if (from !== channel) {
      const listeners = sessionListeners.get(from);
      const replies = listeners === undefined ? null : parseReplies(text, replicaId);
      if (listeners !== undefined && replies !== null) deliver(listeners, replies);
      return;
    }
    const event = parse(text);
    if (event === null) {
      logger.warn({ channel }, 'relayed event unreadable: ignored');
      return;
    }
    if (event.kind === 'outcome') deliver(outcomeListeners, event.outcome);
    else deliver(turnStartListeners, event.turn);
  });

  function deliver<Event>(listeners: ReadonlySet<(event: Event) => void>, event: Event): void {
    for (const listener of listeners) {
      try {
        listener(event);
      } catch (err) {
        logger.error({ err }, 'relayed event listener failed');
      }
    }
  }

  try {
    await Promise.all([connect(publisher, retryAfterMs), connect(subscriber, retryAfterMs)]);
    await subscriber.subscribe(channel);
  } catch (err) {
    publisher.disconnect();
    subscriber.disconnect();
    throw storeFailure(err, retryAfterMs);
  }

  /**
   * Publishes from the primary holding the prefix's slot: on a cluster, the publishes of one
   * replica then leave one node in the order they were made (another node would relay them over
   * its own link).
   */
  async function send(topic: string, text: string): Promise<number> {
    return primaryOf(publisher, options.prefix).publish(topic, text);
  }

  function publish(to: string, event: RelayedEvent): void {
    // The channels of this replica hear its own events from the outcome bus and the controller.
    if (to === replicaId) return;
    let text: string;
    try {
      text = JSON.stringify(event);
    } catch (err) {
      logger.error({ err, kind: event.kind }, 'event relay failed');
      return;
    }
    // Sent at once, never awaited: the outcome path does not wait for the other replicas.
    send(eventChannelOf(options.prefix, to), text).catch((err: unknown) => {
      logger.warn(
        { err, kind: event.kind, to },
        'event relay failed: the replica it is for misses this event',
      );
    });
  }

  /** Session channels no longer followed whose unsubscribe failed: ioredis restores them on reconnect. */
  const staleTopics = new Set<string>();

  // A (un)subscribe sent while the connection is away fails at once (no offline queue), and ioredis
  // restores, at a reconnect, the subscriptions it last saw succeed — before 'ready' is emitted:
  // here the followed sessions are subscribed again (again is harmless) and those given up
  // meanwhile unsubscribed, so that subscriptions never pile up across outages.
  subscriber.on('ready', () => {
    for (const topic of sessionListeners.keys()) setSubscribed(topic, true);
    for (const topic of staleTopics) if (!sessionListeners.has(topic)) setSubscribed(topic, false);
  });

  /** (Un)subscribes a session channel; a failure is logged: its streams miss other replicas' replies. */
  function setSubscribed(topic: string, subscribed: boolean): void {
    if (subscribed) staleTopics.delete(topic);
    const change = subscribed ? subscriber.subscribe(topic) : subscriber.unsubscribe(topic);
    change.then(
      () => {
        if (!subscribed) staleTopics.delete(topic);
      },
      (err: unknown) => {
        if (subscribed) {
          logger.warn(
            { err },
            "session reply subscription failed: streams here miss other replicas' replies",
          );
          return;
        }
        if (!sessionListeners.has(topic)) staleTopics.add(topic);
        logger.warn({ err }, 'session reply unsubscribe failed: undone once Redis is back');
      },
    );
  }

  return {
    replicaId,
    publishReplies(replies) {
      const topic = sessionChannelOf(options.prefix, replies.channel, replies.session);
      send(topic, JSON.stringify({ from: replicaId, ...replies })).catch((err: unknown) => {
        logger.warn({ err }, 'reply relay failed: streams on other replicas miss these replies');
      });
    },
    followSession(channelId, session, listener) {
      const topic = sessionChannelOf(options.prefix, channelId, session);
      let listeners = sessionListeners.get(topic);
      if (listeners === undefined) {
        listeners = new Set();
        sessionListeners.set(topic, listeners);
        setSubscribed(topic, true);
      }
      listeners.add(listener);
      return () => {
        if (listeners.delete(listener) && listeners.size === 0 && sessionListeners.get(topic) === listeners) {
          sessionListeners.delete(topic);
          setSubscribed(topic, false);
        }
      };
    },
    publishOutcome(to, outcome) {
      publish(to, { kind: 'outcome', outcome });
    },
    publishTurnStart(to, turn) {
      publish(to, { kind: 'turn_start', turn: turnStartOf(turn) });
    },
    subscribeOutcomes(listener) {
      outcomeListeners.add(listener);
      return () => outcomeListeners.delete(listener);
    },
    subscribeTurnStarts(listener) {
      turnStartListeners.add(listener);
      return () => turnStartListeners.delete(listener);
    },
    async close() {
      outcomeListeners.clear();
      turnStartListeners.clear();
      sessionListeners.clear();
      await quit([publisher, subscriber]);
    },
  };
}

async function quit(connections: RedisClient[]): Promise<void> {
  try {
    await Promise.all(connections.map((connection) => connection.quit()));
  } catch {
    for (const connection of connections) connection.disconnect();
  }
}

/** The event in `text`, or null when it is not one (another program on the channel). */
function parse(text: string): RelayedEvent | null {
  try {
    const event = JSON.parse(text) as { kind?: unknown; outcome?: unknown; turn?: unknown } | null;
    if (event?.kind === 'outcome' && typeof event.outcome === 'object') return event as RelayedEvent;
    if (event?.kind === 'turn_start' && typeof event.turn === 'object') return event as RelayedEvent;
    return null;
  } catch {
    return null;
  }
}

/** The replies in `text` unless this replica sent them or they are not replies. */
function parseReplies(text: string, replicaId: string): SessionReplies | null {
  try {
    const event = JSON.parse(text) as (SessionReplies & { from?: unknown }) | null;
    if (typeof event?.from !== 'string' || event.from === replicaId || !Array.isArray(event.replies))
      return null;
    const { from: _from, ...replies } = event;
    return replies;
  } catch {
    return null;
  }
}
