import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import {
  type AddResult,
  type Delivery,
  type DeliveryClaim,
  type DeliveryError,
  type KeptOutcome,
  type Logger,
  type Outcome,
  type ReplyOutbox,
  type Settlement,
  SwitchboardError,
  silentLogger,
} from '@switchboard/core';
import type { ScriptOf } from './lua-scripts.js';
import { startRedisClock } from './redis-clock.js';
import { KEPT_OUTCOME_LEASE_MS, keptOutcomeArgs } from './redis-kept-outcomes.js';
import {
  type RedisClientFactory,
  connect,
  redisClientFactory,
  storeFailure,
  type RedisTarget,
} from './redis-connection.js';
import { replyOutboxKeysOf } from './reply-outbox-keys.js';
import { openScriptClient } from './script-client.js';
import type { ReplicationOptions } from './replication-wait.js';

export interface RedisReplyOutboxOptions {
  /**
   * Replicas that must hold a write before the store answers for it (`WAIT`; docs/design.md §5
   * "Failover"). Default: none waited for.
   */
  replication?: ReplicationOptions | undefined;
  /** Redis to connect to, e.g. `redis://127.0.0.1:6379/0`. Either this or `createClient`. */
  url?: RedisTarget;
  /** Makes the outbox's two connections instead of `url` (give them `FAIL_FAST_OPTIONS`). */
  createClient?: RedisClientFactory;
  /** The deployment's prefix (the pool's): keys are `{<prefix>}:reply-outbox:…`. */
  prefix: string;
  /**
   * How long a claim holds before another instance may claim the delivery again (ms). Make it
   * longer than a send's deadline plus its settlement, or a slow send is sent twice.
   */
  leaseMs: number;
  /** This instance's name in announcements. Default: `<hostname>:<pid>:<random>`. */
  replicaId?: string;
  /** Child `component: outbox.redis`. Default silent. */
  logger?: Logger;
  /** `retryAfterMs` of `SB_STORE_UNAVAILABLE` while Redis does not answer. Default 1000. */
  retryAfterMs?: number;
  /** How often `now()` reads Redis' `TIME` again (ms). Default 60 000. */
  clockRemeasureEveryMs?: number;
  /**
   * Which outcomes a removal (`delivered`, `failed`) keeps until their records are stored, and
   * in which form (`createRedisKeptOutcomes` recovers them). Default: none is kept.
   */
  keptOutcome?: KeptOutcome;
}

const DEFAULTS = {
  retryAfterMs: 1000,
  clockRemeasureEveryMs: 60_000,
} satisfies Partial<RedisReplyOutboxOptions>;

/** Deliveries one `list` script call reads. */
const LIST_PAGE = 100;

/**
 * A due time as the scripts store it: a sorted-set score must be a number, so NaN counts as due
 * at once and a time is kept within [0, 2^53). A script failing on it halfway would leave its
 * chat in no set, never claimed again.
 */
const storedTimeOf = (ms: number) =>
  Number.isNaN(ms) ? 0 : Math.min(Math.max(0, ms), Number.MAX_SAFE_INTEGER);

/** A `ReplyOutbox` shared by replicas, plus what only its owner calls. */
export interface RedisReplyOutbox extends ReplyOutbox {
  readonly replicaId: string;
  /**
   * This host's clock corrected to Redis' `TIME`: the clock to claim with and to compute
   * `retry` due times on (the sender's `now`), so that replicas on drifting hosts agree on due
   * times and lease deadlines. The outbox itself reads no clock.
   */
  now(): number;
  /**
   * Unsubscribes and closes both connections. Claims still held are not handed back: they end
   * with their lease, by when a send still under way has passed its deadline.
   */
  close(): Promise<void>;
}

/** `{body, attempts, notBefore, lastError or ''}` as the claim and list scripts answer it. */
type DeliveryReply = [body: string, attempts: string, notBefore: string, lastError: string];

/** What the scripts store as `body`: the fields scripts update live beside it. */
function bodyOf(delivery: Delivery): string {
  const { attempts: _attempts, notBefore: _notBefore, lastError: _lastError, ...body } = delivery;
  return JSON.stringify(body);
}

function deliveryOf([body, attempts, notBefore, lastError]: DeliveryReply): Delivery {
  const delivery: Delivery = {
    ...JSON.parse(body),
    attempts: Number(attempts),
    notBefore: Number(notBefore),
  };
  if (lastError !== '') delivery.lastError = JSON.parse(lastError) as DeliveryError;
  return delivery;
}

/** One announcement on the due channel: the instance that made it and the channel. */
function announcementOf(text: string): [from: string, channel: string] | null {
  try {
    const parsed: unknown = JSON.parse(text);
    return Array.isArray(parsed) && parsed.length === 2 ? (parsed as [string, string]) : null;
  } catch {
    return null;
  }
}

/** Tokens of unanswered removals kept at most: one dropped only loses its repeat's flag. */
const MAX_UNANSWERED_REMOVALS = 1000;

/**
 * The reply outbox in Redis (docs/design.md §5 "Several replicas"): replicas sharing one Redis
 * share their deliveries; every transition is one Lua script (`lua/reply-outbox/`), so a chat's
 * deliveries leave in order and one at a time across replicas. A claim is a lease of `leaseMs`:
 * once it has expired, the next claim on the channel takes the delivery back, so a dead
 * replica's deliveries are sent by another, and the late settlement of the first answers `lost`.
 * Due times and lease deadlines compare the callers' clocks (`claim`'s `nowMs`, `retry`'s
 * `notBeforeMs`), never Redis' `TIME`: give every replica's sender `now()`.
 *
 * Connects and subscribes to the announcements before it resolves; rejects with
 * `SB_STORE_UNAVAILABLE` when Redis does not answer, as does every call while it stays away.
 */
export async function createRedisReplyOutbox(options: RedisReplyOutboxOptions): Promise<RedisReplyOutbox> {
  const { leaseMs } = options;
  const retryAfterMs = options.retryAfterMs ?? DEFAULTS.retryAfterMs;
  if (!Number.isInteger(leaseMs) || leaseMs < 1) {
    throw new SwitchboardError('SB_CONFIG_INVALID', {
      message: `redis reply outbox: leaseMs must be a positive integer, got ${leaseMs}`,
    });
  }
  const createClient = clientFactoryOf(options);
  const replicaId = options.replicaId ?? `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  const logger = (options.logger ?? silentLogger).child({ component: 'outbox.redis' });
  const keys = replyOutboxKeysOf(options.prefix);
  /** The base of the kept outcomes' keys (lua/kept-outcomes/includes/keep-outcomes.lua): the deployment's tag. */
  const keptOutcomeBase = `{${options.prefix}}:`;
  const listeners = new Set<(channel: string) => void>();

  const commands = createClient('commands');
  const subscriber = createClient('subscriber');
  // Failures are answered per call; the events must not crash the process.
  for (const connection of [commands, subscriber]) connection.on('error', () => {});
  let opened: Awaited<ReturnType<typeof openScriptClient>>;
  let clock: Awaited<ReturnType<typeof startRedisClock>>;
  try {
    opened = await openScriptClient({
      url: undefined,
      client: commands,
      prefix: options.prefix,
      retryAfterMs,
      replication: options.replication,
    });
    await connect(subscriber, retryAfterMs);
    await subscriber.subscribe(keys.dueChannel);
    clock = await startRedisClock(commands, {
      remeasureEveryMs: options.clockRemeasureEveryMs ?? DEFAULTS.clockRemeasureEveryMs,
      logger,
      prefix: options.prefix,
    });
  } catch (err) {
    commands.disconnect();
    subscriber.disconnect();
    throw storeFailure(err, retryAfterMs);
  }

  function notify(channel: string): void {
    for (const listener of listeners) {
      try {
        listener(channel);
      } catch (err) {
        logger.error({ err, channel }, 'outbox listener failed');
      }
    }
  }

  // Pub/sub is at most once: an announcement lost across a reconnect waits for the sender's poll.
  subscriber.on('message', (_channel: string, text: string) => {
    const announcement = announcementOf(text);
    if (announcement === null) logger.warn({ text }, 'outbox announcement unreadable: ignored');
    else if (announcement[0] !== replicaId) notify(announcement[1]);
  });

  /**
   * Per channel, tokens of claims whose reply never came (Redis may have applied them): the next
   * claim of the channel repeats one, which answers that delivery instead of leaving its chat
   * held until the lease ends.
   */
  const unansweredClaims = new Map<string, string[]>();

  const run = <Reply>(script: ScriptOf<'reply-outbox'>, channel: string, ...args: Array<string | number>) =>
    opened.script<Reply>(script, keys.keysOf(channel), [keys.prefix, channel, replicaId, ...args]);

  /**
   * Tokens whose last removal got no reply (Redis may have applied it): the next removal with the
   * token says it repeats one, and a delivery ended by that token (its remembered id holds it)
   * answers `settled` instead of `lost`, so the sender records the messages' outcome
   * (lua/reply-outbox/remove.lua). Oldest first; bounded, as a sender may give a claim up.
   */
  const unansweredRemovals = new Set<string>();

  async function remove(claim: DeliveryClaim, ended?: readonly Outcome[]): Promise<Settlement> {
    const { id, channel } = claim.delivery;
    const { token } = claim;
    const repeat = unansweredRemovals.delete(token);
    const kept = keptOutcomeArgs(ended, options.keptOutcome, clock.now() + KEPT_OUTCOME_LEASE_MS);
    let reply: [Settlement, number?];
    try {
      reply = await run(
        'reply-outbox/remove',
        channel,
        id,
        token,
        repeat ? '1' : '0',
        keptOutcomeBase,
        kept.dueAt,
        ...kept.pairs,
      );
    } catch (err) {
      unansweredRemovals.add(token);
      if (unansweredRemovals.size > MAX_UNANSWERED_REMOVALS)
        unansweredRemovals.delete(unansweredRemovals.values().next().value as string);
      throw err;
    }
    const [outcome, nextHead] = reply;
    if (nextHead === 1) notify(channel);
    return outcome;
  }

  return {
    durable: true,
    shared: true,
    replicaId,
    now: clock.now,

    async add(delivery): Promise<AddResult> {
      const { id, channel, chat, attempts, notBefore, lastError } = delivery;
      // The retry script counts attempts up with HINCRBY, which fails on anything but an integer.
      if (!Number.isSafeInteger(attempts) || attempts < 0) {
        throw new TypeError(`delivery ${id}: attempts must be a whole number >= 0, got ${attempts}`);
      }
      // Redis' PX takes a whole number of ms above 0.
      const { rememberForMs } = delivery;
      if (rememberForMs !== undefined && (!Number.isSafeInteger(rememberForMs) || rememberForMs <= 0)) {
        throw new TypeError(`delivery ${id}: rememberForMs must be a whole number > 0, got ${rememberForMs}`);
      }
      const result = await run<AddResult>(
        'reply-outbox/add',
        channel,
        id,
        chat,
        bodyOf(delivery),
        attempts,
        storedTimeOf(notBefore),
        lastError === undefined ? '' : JSON.stringify(lastError),
        rememberForMs ?? '',
      );
      if (result === 'added') notify(channel);
      return result;
    },

    async claim(channel, nowMs) {
      const unanswered = unansweredClaims.get(channel) ?? [];
      unansweredClaims.set(channel, unanswered);
      const token = unanswered.shift() ?? randomUUID();
      let reply: [Array<[string, string]>, DeliveryReply | []];
      try {
        reply = await run('reply-outbox/claim', channel, nowMs, token, leaseMs);
      } catch (err) {
        unanswered.push(token);
        throw err;
      }
      const [reclaimed, fields] = reply;
      for (const [deliveryId, chat] of reclaimed) {
        logger.warn(
          { deliveryId, channel, chat, reclaimedBy: replicaId },
          'delivery lease expired: the replica sending it stopped or lost redis; sending it again',
        );
      }
      return fields.length === 0 ? null : { delivery: deliveryOf(fields), token };
    },

    delivered: remove,

    retry(claim, notBeforeMs, error) {
      const { id, channel } = claim.delivery;
      return run<Settlement>(
        'reply-outbox/retry',
        channel,
        id,
        claim.token,
        storedTimeOf(notBeforeMs),
        JSON.stringify(error),
      );
    },

    failed: remove,

    async pending() {
      const counts = await opened.client.hgetall(keys.counts).catch((err: unknown) => {
        throw storeFailure(err, retryAfterMs);
      });
      return Object.fromEntries(Object.entries(counts).map(([channel, count]) => [channel, Number(count)]));
    },

    async list(channel) {
      const deliveries: Delivery[] = [];
      let after = '0';
      for (;;) {
        const [last, page] = await run<[string, DeliveryReply[]]>(
          'reply-outbox/list',
          channel,
          after,
          LIST_PAGE,
        );
        deliveries.push(...page.map(deliveryOf));
        if (page.length < LIST_PAGE) return deliveries;
        after = last;
      }
    },

    onDue(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },

    async close() {
      clock.stop();
      try {
        await Promise.all([subscriber.quit(), commands.quit()]);
      } catch {
        commands.disconnect();
        subscriber.disconnect();
      }
    },
  };
}

function clientFactoryOf(options: RedisReplyOutboxOptions): RedisClientFactory {
  if (options.createClient !== undefined) return options.createClient;
  if (options.url !== undefined) return redisClientFactory(options.url);
  throw new SwitchboardError('SB_CONFIG_INVALID', {
    message: 'the redis reply outbox needs `url` or `createClient`',
  });
}
