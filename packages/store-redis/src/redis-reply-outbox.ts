import { randomUUID } from 'node:crypto';
import {
  type AddAndClaimResult,
  type AddResult,
  type ClaimedDelivery,
  type Delivery,
  type DeliveryClaim,
  type DeliveryError,
  type EndAndClaimResult,
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
  mayHaveRun,
  storeFailure,
  type RedisTarget,
} from './redis-connection.js';
import { replyOutboxKeysOf } from './reply-outbox-keys.js';
import { openScriptClient } from './script-client.js';
import type { ReplicationOptions } from './replication-wait.js';
import { defaultReplicaId } from './replica-id.js';

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

/**
 * How many ARGV an add takes (`ReplyAddition.args`): the outbox's prefix, channel and instance id,
 * the delivery's seven fields, and the claim's three.
 */
const ADD_ARG_COUNT = 13;

/** An add's ARGV (`ADD_ARG_COUNT`), the outbox's key prefix first. */
type AddArgs = [prefix: string, ...rest: Array<string | number>];

/** The add's ARGV of a settling script that stores no delivery: an empty prefix, the rest unused. */
export const NO_ADDITION_ARGS: readonly string[] = Array.from({ length: ADD_ARG_COUNT }, () => '');

/**
 * What a settling script of the pool answers for the delivery it stored (lua/pool/complete.lua):
 * {result, claimed (1: leased to the addition's claim token), moreDue (1: it became its chat's
 * head unclaimed, announced)}.
 */
export type AddedReply = [result: AddResult, claimed: 0 | 1, moreDue: 0 | 1];

/**
 * One delivery to store in another script's call (lua/pool/complete.lua includes
 * reply-outbox/includes/add-delivery), validated as `add` validates it: what that call passes,
 * and what its answer means.
 */
export interface ReplyAddition {
  /**
   * The add's ARGV in the calling script (`ADD_ARG_COUNT` of them), first the outbox's key prefix
   * `{<prefix>}:reply-outbox:`: the calling script's keys must share its hash tag (one Redis
   * Cluster slot).
   */
  readonly args: Readonly<AddArgs>;
  /**
   * What the add did, from the script's answer: a claim answered 1 is the caller's own delivery
   * object under the addition's claim token, as `addAndClaim` hands it out. A head stored
   * unclaimed was announced to the other instances. Asked for a claim, a due head it could not
   * lease (another chat's was due first) answers `dueUnclaimed`, for the caller to claim; asked
   * for none, the head is announced to this instance's listeners, as `add` does.
   */
  answered(reply: AddedReply): Promise<AddAndClaimResult>;
  /**
   * The call failed with `err`, unanswered. When Redis may have applied it (`mayHaveRun`), the
   * delivery may be leased to the addition's claim token, which the channel's next claim repeats,
   * at once; a call that was never sent stored nothing, and nothing is repeated.
   */
  unanswered(err: unknown): void;
}

/** Deliveries stored by a settling script's own call (`createRedisQueryPool`'s `outbox`). */
export interface ReplyAdditions {
  /**
   * The key prefix `{<prefix>}:reply-outbox:` of each partition the deliveries spread over,
   * partition k's at k: one for an outbox of one partition. A pool storing replies must share
   * them (`createRedisQueryPool`'s `outbox`).
   */
  readonly keyPrefixes: readonly string[];
  /**
   * `delivery` as a settling script stores it; with `nowMs` (the outbox's clock), leased to this
   * instance at once when it can leave now, as `addAndClaim` would lease it. Throws a `TypeError`
   * for fields a script could store only halfway (as `add` rejects them), before any call.
   */
  additionOf(delivery: Delivery, nowMs?: number): ReplyAddition;
}

/** A `ReplyOutbox` shared by replicas, plus what only its owner calls. */
export interface RedisReplyOutbox extends ReplyOutbox, ReplyAdditions {
  readonly replicaId: string;
  /**
   * This host's clock corrected to Redis' `TIME`: the clock to claim with and to compute
   * `retry` due times on (the sender's `now`), so that replicas on drifting hosts agree on due
   * times and lease deadlines. The outbox itself reads no clock.
   */
  now(): number;
  /**
   * Whether the next removal with `token` repeats an `endAndClaim` whose reply never came, which
   * Redis may have applied, leasing the next delivery to it: only that same call, repeated, hands
   * that delivery back.
   */
  repeatsClaimNext(token: string): boolean;
  /**
   * Unsubscribes and closes both connections. Claims still held are not handed back: they end
   * with their lease, by when a send still under way has passed its deadline.
   */
  close(): Promise<void>;
}

/** `{body, attempts, notBefore, lastError or ''}` as the claim and list scripts answer it. */
type DeliveryReply = [body: string, attempts: string, notBefore: string, lastError: string];

/** A claim whose reply never came: its token, and the delivery an add may have leased to it. */
interface UnansweredClaim {
  token: string;
  deliveryId?: string;
}

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
  const replicaId = options.replicaId ?? defaultReplicaId();
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
   * Per channel, claims whose reply never came (Redis may have applied them): the next claim of
   * the channel repeats one, which answers that delivery instead of leaving its chat held until
   * the lease ends. `deliveryId`: the delivery an add may have leased to the token as it stored
   * it (such a claim leaves no token key: its id finds it).
   */
  const unansweredClaims = new Map<string, UnansweredClaim[]>();
  function unansweredClaimsOf(channel: string): UnansweredClaim[] {
    let claims = unansweredClaims.get(channel);
    if (claims === undefined) {
      claims = [];
      unansweredClaims.set(channel, claims);
    }
    return claims;
  }

  const run = <Reply>(script: ScriptOf<'reply-outbox'>, channel: string, ...args: Array<string | number>) =>
    opened.script<Reply>(script, keys.keysOf(channel), [keys.prefix, channel, replicaId, ...args]);

  /** A claim as the scripts answer it: the delivery's fields, or none. */
  function claimedOf(fields: DeliveryReply | [], token: string, moreDue: number): ClaimedDelivery | null {
    return fields.length === 0 ? null : { delivery: deliveryOf(fields), token, moreDue: moreDue === 1 };
  }

  /**
   * Tokens whose last removal got no reply (Redis may have applied it), with the token of the
   * claim it asked for next (or ''): the next removal with the token says it repeats one, and a
   * delivery ended by that token (its remembered id holds it) answers `settled` instead of
   * `lost`, so the sender records the messages' outcome (lua/reply-outbox/remove.lua), and the
   * next claim answers the delivery it holds. Oldest first; bounded, as a sender may give a claim
   * up.
   */
  const unansweredRemovals = new Map<string, string>();

  async function remove(
    claim: DeliveryClaim,
    ended: readonly Outcome[] | undefined,
    nowMs?: number,
  ): Promise<EndAndClaimResult & { nextHead: boolean }> {
    const { id, channel } = claim.delivery;
    const { token } = claim;
    const unanswered = unansweredRemovals.get(token);
    unansweredRemovals.delete(token);
    const nextToken = nowMs === undefined ? '' : unanswered || randomUUID();
    const kept = keptOutcomeArgs(ended, options.keptOutcome, clock.now() + KEPT_OUTCOME_LEASE_MS);
    let reply: [Settlement, DeliveryReply | [], number];
    try {
      reply = await run(
        'reply-outbox/remove',
        channel,
        id,
        token,
        unanswered === undefined ? '0' : '1',
        nowMs ?? '',
        nextToken,
        nowMs === undefined ? '' : leaseMs,
        keptOutcomeBase,
        kept.dueAt,
        ...kept.pairs,
      );
    } catch (err) {
      unansweredRemovals.set(token, nextToken);
      if (unansweredRemovals.size > MAX_UNANSWERED_REMOVALS)
        unansweredRemovals.delete(unansweredRemovals.keys().next().value as string);
      throw err;
    }
    const [settlement, fields, moreDue] = reply;
    return { settlement, next: claimedOf(fields, nextToken, moreDue), nextHead: moreDue === 1 };
  }

  /** `delivered` and `failed`: a removal that claims nothing next. */
  async function end(claim: DeliveryClaim, ended?: readonly Outcome[]): Promise<Settlement> {
    const { settlement, nextHead } = await remove(claim, ended);
    if (nextHead) notify(claim.delivery.channel);
    return settlement;
  }

  /**
   * The add's ARGV (`ADD_ARG_COUNT`: lua/reply-outbox/add.lua's, lua/pool/complete.lua's); with
   * `nowMs` and `token`, asking it to claim for the caller. Throws before any call on what a script
   * would store only halfway.
   */
  function addArgsOf(delivery: Delivery, nowMs?: number, token?: string): AddArgs {
    const { id, channel, chat, attempts, notBefore, lastError } = delivery;
    // The retry script stores attempts + 1 as given: anything but an integer would stay.
    if (!Number.isSafeInteger(attempts) || attempts < 0) {
      throw new TypeError(`delivery ${id}: attempts must be a whole number >= 0, got ${attempts}`);
    }
    // Redis' PX takes a whole number of ms above 0.
    const { rememberForMs } = delivery;
    if (rememberForMs !== undefined && (!Number.isSafeInteger(rememberForMs) || rememberForMs <= 0)) {
      throw new TypeError(`delivery ${id}: rememberForMs must be a whole number > 0, got ${rememberForMs}`);
    }
    return [
      keys.prefix,
      channel,
      replicaId,
      id,
      chat,
      bodyOf(delivery),
      attempts,
      storedTimeOf(notBefore),
      lastError === undefined ? '' : JSON.stringify(lastError),
      rememberForMs ?? '',
      nowMs ?? '',
      token ?? '',
      nowMs === undefined ? '' : leaseMs,
    ];
  }

  /** Runs the add script with `addArgsOf`'s ARGV. */
  const runAdd = (channel: string, args: Array<string | number>) =>
    opened.script<[AddResult, 1 | 0 | DeliveryReply, number]>('reply-outbox/add', keys.keysOf(channel), args);

  /**
   * An add's claim under `token` may have been applied unanswered: the next claim of the channel
   * repeats it, at once, with the delivery's id (such a claim leaves no token key).
   */
  function addMayHaveClaimed(delivery: Delivery, token: string): void {
    unansweredClaimsOf(delivery.channel).push({ token, deliveryId: delivery.id });
    notify(delivery.channel);
  }

  /** What an add that asked for a claim under `token` did, from its answer. */
  function addedOf(
    delivery: Delivery,
    token: string,
    [result, claimed, moreDue]: [AddResult, 1 | 0 | DeliveryReply, number],
  ): AddAndClaimResult {
    if (claimed === 0) return { result, claim: null };
    // Leased as added: the caller's own object is the delivery it sends.
    if (claimed === 1) return { result, claim: { delivery, token, moreDue: false } };
    return { result, claim: claimedOf(claimed, token, moreDue) };
  }

  return {
    durable: true,
    shared: true,
    replicaId,
    keyPrefixes: [keys.prefix],

    repeatsClaimNext(token) {
      return (unansweredRemovals.get(token) ?? '') !== '';
    },
    now: clock.now,

    async add(delivery) {
      const [result, , newHead] = await runAdd(delivery.channel, addArgsOf(delivery));
      // The script announced a new head to the other replicas; this one's sender hears it here.
      if (newHead === 1) notify(delivery.channel);
      return result;
    },

    async addAndClaim(delivery, nowMs) {
      const token = randomUUID();
      const args = addArgsOf(delivery, nowMs, token);
      try {
        return addedOf(delivery, token, await runAdd(delivery.channel, args));
      } catch (err) {
        addMayHaveClaimed(delivery, token);
        throw err;
      }
    },

    additionOf(delivery, nowMs) {
      const token = nowMs === undefined ? undefined : randomUUID();
      return {
        args: addArgsOf(delivery, nowMs, token),
        async answered(reply) {
          const added = addedOf(delivery, token ?? '', reply);
          if (reply[2] === 0) return added;
          // A head stored unclaimed. Asked for no claim: told here as `add` tells it. Asked for
          // one: it was not due yet, or another chat's head was due first, left to the caller.
          if (nowMs === undefined) notify(delivery.channel);
          else if (storedTimeOf(delivery.notBefore) <= nowMs) return { ...added, dueUnclaimed: true };
          return added;
        },
        unanswered(err) {
          if (!mayHaveRun(err)) return;
          if (token !== undefined) addMayHaveClaimed(delivery, token);
          // It may have stored a head, announced to the other instances only.
          else notify(delivery.channel);
        },
      };
    },

    async claim(channel, nowMs) {
      const unanswered = unansweredClaimsOf(channel);
      const repeated = unanswered.shift();
      const token = repeated?.token ?? randomUUID();
      let reply: [Array<[string, string]>, DeliveryReply | [], number];
      try {
        reply = await run(
          'reply-outbox/claim',
          channel,
          nowMs,
          token,
          leaseMs,
          repeated === undefined ? '0' : '1',
          repeated?.deliveryId ?? '',
        );
      } catch (err) {
        unanswered.push(repeated ?? { token });
        throw err;
      }
      const [reclaimed, fields, moreDue] = reply;
      for (const [deliveryId, chat] of reclaimed) {
        logger.warn(
          { deliveryId, channel, chat, reclaimedBy: replicaId },
          'delivery lease expired: the replica sending it stopped or lost redis; sending it again',
        );
      }
      return claimedOf(fields, token, moreDue);
    },

    delivered: end,

    async endAndClaim(claim, nowMs, ended) {
      const { settlement, next } = await remove(claim, ended, nowMs);
      return { settlement, next };
    },

    retry(claim, notBeforeMs, error) {
      const { id, channel, attempts } = claim.delivery;
      return run<Settlement>(
        'reply-outbox/retry',
        channel,
        id,
        claim.token,
        storedTimeOf(notBeforeMs),
        JSON.stringify(error),
        attempts + 1,
      );
    },

    failed: end,

    async pending() {
      const counts = await opened.client.hgetall(keys.counts).catch((err: unknown) => {
        throw storeFailure(err, retryAfterMs);
      });
      // A channel's count stays at 0 once it emptied (the scripts leave it rather than delete it).
      return Object.fromEntries(
        Object.entries(counts)
          .map(([channel, count]) => [channel, Number(count)] as const)
          .filter(([, count]) => count > 0),
      );
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
