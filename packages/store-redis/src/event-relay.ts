import type { Logger, Outcome, TurnStart } from '@switchboard/core';
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

  subscriber.on('message', (_channel: string, text: string) => {
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

  return {
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
