import type { Logger, Outcome, SessionReplies, TurnStart } from '@switchboard/core';
import type { Redis } from 'ioredis';
import { connect, redisClientFactory, storeFailure } from './redis-connection.js';

/**
 * Hands the engine events of one replica to the others sharing its pool (docs/design.md §5
 * "Several replicas"): the replica that accepted a message hears when another one starts its
 * turn and records its outcome, so that its waiting request and its statuses follow the message.
 *
 * Redis pub/sub on `{<prefix>}:events`: at most once, and only to replicas subscribed at the
 * time. A lost event leaves the accepting replica's request to end with 202 at its timeout and
 * its status to come from the store, which the replica that ran the turn writes.
 */
export interface RedisEventRelay {
  /** Sends `outcome` to the other replicas; a failure is logged, never thrown. */
  publishOutcome(outcome: Outcome): void;
  /** Sends what `turn` says about its messages to the other replicas; a failure is logged, never thrown. */
  publishTurnStart(turn: TurnStart): void;
  /** Calls `listener` with every outcome another replica publishes; returns the unsubscribe. */
  subscribeOutcomes(listener: (outcome: Outcome) => void): () => void;
  /** Calls `listener` with every turn start another replica publishes; returns the unsubscribe. */
  subscribeTurnStarts(listener: (turn: TurnStart) => void): () => void;
  /**
   * Sends replies sent to a session to the replicas following it (`followSession`), on the
   * session's own pub/sub channel; a failure is logged, never thrown.
   */
  publishReplies(replies: SessionReplies): void;
  /**
   * Calls `listener` with the replies other replicas send to one session (of one channel) until
   * the returned function is called: the replica subscribes to the session's channel while it
   * has listeners. Replies published before the subscription took effect are not seen.
   */
  followSession(channel: string, session: string, listener: (replies: SessionReplies) => void): () => void;
  /** Quits both connections (drops them at once when Redis is gone). */
  close(): Promise<void>;
}

export interface RedisEventRelayOptions {
  /** The pool's Redis, e.g. `redis://127.0.0.1:6379/0`; connected with `FAIL_FAST_OPTIONS`. */
  url: string;
  /** The pool's prefix: replicas sharing a pool share its events. */
  prefix: string;
  /** This replica's id (the pool's `replicaId`): its own events come back and are ignored. */
  replicaId: string;
  logger: Logger;
  /** The wait reported in `SB_STORE_UNAVAILABLE` when Redis cannot be reached at start. Default: 1000 ms. */
  retryAfterMs?: number;
}

const DEFAULTS = { retryAfterMs: 1_000 } satisfies Partial<RedisEventRelayOptions>;

/** One event on the channel, with the replica that published it. */
type RelayedEvent =
  | { from: string; kind: 'outcome'; outcome: Outcome }
  | { from: string; kind: 'turn_start'; turn: TurnStart };

/** The channel of a pool's events, in the pool's hash tag (docs/design.md §5). */
export function eventChannelOf(prefix: string): string {
  return `{${prefix}}:events`;
}

/**
 * The channel of one session's replies: only replicas with an event stream on it subscribe.
 * Channel ids have no `:`, so the name is unambiguous.
 */
export function sessionChannelOf(prefix: string, channel: string, session: string): string {
  return `{${prefix}}:replies:${channel}:${session}`;
}

/** Only what the channels read of a turn start: the whole `Turn` carries every message's text. */
function turnStartOf(turn: TurnStart): TurnStart {
  return {
    id: turn.id,
    pipeline: turn.pipeline,
    messages: turn.messages.map(({ message, rule }) => ({
      message: { id: message.id, channel: message.channel },
      ...(rule === undefined ? {} : { rule }),
    })),
  };
}

/**
 * Connects a publishing and a subscribed connection and subscribes to the pool's event channel
 * before it resolves; on failure leaves nothing open behind.
 */
export async function createRedisEventRelay(options: RedisEventRelayOptions): Promise<RedisEventRelay> {
  const { replicaId, logger } = options;
  const retryAfterMs = options.retryAfterMs ?? DEFAULTS.retryAfterMs;
  const createClient = redisClientFactory(options.url);
  const channel = eventChannelOf(options.prefix);
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
    if (event.from === replicaId) return;
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

  function publish(event: RelayedEvent): void {
    let text: string;
    try {
      text = JSON.stringify(event);
    } catch (err) {
      logger.error({ err, kind: event.kind }, 'event relay failed');
      return;
    }
    // Sent at once, never awaited: the outcome path does not wait for the other replicas.
    publisher.publish(channel, text).catch((err: unknown) => {
      logger.warn({ err, kind: event.kind }, 'event relay failed: the other replicas miss this event');
    });
  }

  // A (un)subscribe sent while the connection is away fails at once (no offline queue), and ioredis
  // only restores the subscriptions it saw succeed: after a reconnect the followed sessions are
  // subscribed again (again is harmless).
  subscriber.on('ready', () => {
    for (const topic of sessionListeners.keys()) setSubscribed(topic, true);
  });

  /** (Un)subscribes a session channel; a failure is logged: its streams miss other replicas' replies. */
  function setSubscribed(topic: string, subscribed: boolean): void {
    const change = subscribed ? subscriber.subscribe(topic) : subscriber.unsubscribe(topic);
    change.catch((err: unknown) => {
      logger.warn(
        { err, subscribed },
        "session reply subscription failed: streams here miss other replicas' replies",
      );
    });
  }

  return {
    publishReplies(replies) {
      const topic = sessionChannelOf(options.prefix, replies.channel, replies.session);
      publisher.publish(topic, JSON.stringify({ from: replicaId, ...replies })).catch((err: unknown) => {
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
    publishOutcome(outcome) {
      publish({ from: replicaId, kind: 'outcome', outcome });
    },
    publishTurnStart(turn) {
      publish({ from: replicaId, kind: 'turn_start', turn: turnStartOf(turn) });
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

async function quit(connections: Redis[]): Promise<void> {
  try {
    await Promise.all(connections.map((connection) => connection.quit()));
  } catch {
    for (const connection of connections) connection.disconnect();
  }
}

/** The event in `text`, or null when it is not one (another program on the channel). */
function parse(text: string): RelayedEvent | null {
  try {
    const event = JSON.parse(text) as Partial<RelayedEvent> | null;
    if (typeof event?.from !== 'string') return null;
    if (event.kind === 'outcome' && typeof event.outcome === 'object') return event as RelayedEvent;
    if (event.kind === 'turn_start' && typeof event.turn === 'object') return event as RelayedEvent;
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
