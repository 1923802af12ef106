import { randomUUID } from 'node:crypto';
import {
  type ClaimedTurn,
  type Concurrency,
  type EnqueueResult,
  type KeptOutcome,
  type Logger,
  type PoolStats,
  type QueryPool,
  type QueueLimits,
  type SessionsView,
  type SettleOptions,
  type SettledReplies,
  type Settlement,
  SwitchboardError,
  type TenantShare,
  crashAfter,
  crashPoint,
  type Turn,
  WakeTimer,
  isSwitchboardError,
  requestIdOf,
  silentLogger,
  turnIdOf,
  within,
} from '@switchboard/core';
import {
  type SharedConfig,
  type SharedPipelinePolicy,
  configFieldsOf,
  configMismatch,
  differencesOf,
  fingerprintOf,
} from './config-fingerprint.js';
import { type StoreHealth, checkRedisHealth } from './health.js';
import type { ClaimPermits } from './global-permits.js';
import { LeaseKeeper, type Renewal } from './lease-keeper.js';
import { DEFAULT_LEASE_TIMING, leaseTimingProblems } from './lease-timing.js';
import type { ScriptOf } from './lua-scripts.js';
import { KEPT_OUTCOME_LEASE_MS, keptOutcomeArgs } from './redis-kept-outcomes.js';
import { openPoolConnection } from './pool-connection.js';
import {
  checkOutboxPartitions,
  checkPartitionCount,
  isDeploymentPrefix,
  recordPartitionCount,
} from './partitions.js';
import { poolKeysOf } from './pool-keys.js';
import {
  FAIL_FAST_OPTIONS,
  type RedisClientFactory,
  mayHaveRun,
  redisClientFactory,
  storeFailure,
  type RedisTarget,
} from './redis-connection.js';
import {
  type LocateReply,
  type MessageReply,
  type ReclaimedReply,
  type RunnableState,
  type TurnReply,
  locatedOf,
  payloadOf,
  queuedOf,
  runnableStateOf,
  turnOf,
} from './script-replies.js';
import type { ReplicationOptions } from './replication-wait.js';
import { defaultReplicaId } from './replica-id.js';
import {
  type AddedReply,
  NO_ADDITION_ARGS,
  type ReplyAddition,
  type ReplyAdditions,
} from './redis-reply-outbox.js';
import { replyOutboxKeysOf } from './reply-outbox-keys.js';

export interface RedisQueryPoolOptions {
  /**
   * Replicas that must hold a write before the store answers for it (`WAIT`; docs/design.md §5
   * "Failover"). Default: none waited for.
   */
  replication?: ReplicationOptions | undefined;
  /** Redis to connect to, e.g. `redis://127.0.0.1:6379/0`. Either this or `createClient`. */
  url?: RedisTarget;
  /**
   * Makes the pool's two connections instead of `url` (give them `FAIL_FAST_OPTIONS`, or
   * enqueues wait in ioredis' offline queue while Redis is down).
   */
  createClient?: RedisClientFactory;
  /** Namespaces the pool's keys (`{<prefix>}:…`); replicas sharing a pool use the same prefix. */
  prefix: string;
  concurrency: Concurrency;
  limits: QueueLimits;
  /** The pipelines' policies; pass whole `PipelinePolicy` objects to also agree on retry and timeout. */
  pipelines: readonly SharedPipelinePolicy[];
  /**
   * The shares of the tenants that configure one (docs/design.md §10 "Fair shares"); any other
   * tenant has `defaultTenantShare`. Default: none.
   */
  tenants?: readonly TenantShare[] | undefined;
  /**
   * Called when a renewal finds that the stored limits and policies differ from this replica's
   * (another replica reloaded): the caller may reload its own file and `reconfigure` before the
   * renewal is tried again, within one renewal period. Still different after it (or without it),
   * the replica gives up its turns and refuses work, as when it joined with other values.
   */
  reconcile?(): Promise<void>;
  /** The pool's clock, ms since the epoch. Default: this host's clock corrected to Redis' `TIME`. */
  now?: () => number;
  logger?: Logger;
  /** How long a claim holds without renewal. Default: 15 000 ms. */
  leaseMs?: number;
  /** How often this replica renews its leases and heartbeat. Default: 5000 ms. */
  renewEveryMs?: number;
  /** Without a successful renewal for this long, this replica gives up its turns. Default: 10 000 ms. */
  fenceAfterMs?: number;
  /** The wait suggested to refused senders, and to callers while Redis is down. Default: 1000 ms. */
  refusalRetryAfterMs?: number;
  /**
   * How long an enqueue whose reply was lost (a timeout, a cut connection) is repeated, with the
   * same request id, before it fails with `SB_STORE_UNAVAILABLE`: the repeat answers what Redis
   * answered the first call, so the message is taken once. Measured from the first call, on this
   * host's monotonic clock. Default: 5000 ms.
   */
  enqueueRepeatForMs?: number;
  /** How often the default clock reads Redis' `TIME` again. Default: 60 000 ms. */
  clockRemeasureEveryMs?: number;
  /** This replica's name in leases and heartbeats. Default: `<hostname>:<pid>:<random>`. */
  replicaId?: string;
  /**
   * Which outcomes the settling scripts keep until their records are stored, and in which form
   * (`createRedisKeptOutcomes` recovers them): the outcomes `complete` and `retry` end, and those
   * of messages an enqueue drops from a full session. Default: none is kept.
   */
  keptOutcome?: KeptOutcome;
  /**
   * The global limit as permits shared with pools this one does not see (the other partitions of
   * a deployment, docs/design.md §5 "Partitions"): every claim, in a step or not, takes a free
   * permit of this replica's. Default: the global limit counted in this pool alone.
   */
  permits?: ClaimPermits;
  /**
   * How many partitions the deployment's sessions spread over, this pool one of them
   * (`createPartitionedQueryPool`): part of the configuration replicas must agree on. Default 1.
   */
  partitions?: number;
  /**
   * The reply outbox of the deployment (`createRedisReplyOutbox`, under the same prefix; a
   * partitioned pool's: `createPartitionedReplyOutbox`): `complete` then stores
   * `SettleOptions.replies` in its own script (`storesReplies`), the delivery stored exactly when
   * the turn completes. Default: none, the caller stores replies first.
   */
  outbox?: ReplyAdditions;
}

/** The answer a `complete` stores in its own call, and whom it tells what the add did. */
interface StoredAnswer {
  addition: ReplyAddition;
  replies: SettledReplies;
}

const DEFAULTS = {
  ...DEFAULT_LEASE_TIMING,
  refusalRetryAfterMs: 1_000,
  enqueueRepeatForMs: 5_000,
  clockRemeasureEveryMs: 60_000,
} satisfies Partial<RedisQueryPoolOptions>;

/** The error reply of a script that found no configuration (lua/pool/includes/preamble.lua). */
const NO_CONFIG_REPLY = 'SBNOCONFIG';

/** Due times are sorted-set scores and must be finite: a longer delay (or NaN) is bounded. */
const MAX_RETRY_DELAY_MS = 2 ** 31 - 1;

/**
 * How much longer than `fenceAfterMs` a settled claim's tombstone lasts. Its holder repeats an
 * unanswered settlement until Redis answers or fencing gives the lease up, `fenceAfterMs` after
 * its last renewal; the margin covers the pauses between repeats, command timeouts and the
 * skew between replicas' clocks (another replica may purge the tombstone).
 */
const TOMBSTONE_MARGIN_MS = 50_000;

/** The first pause between two calls of an unanswered enqueue, doubled up to `ENQUEUE_REPEAT_MAX_PAUSE_MS`. */
const ENQUEUE_REPEAT_PAUSE_MS = 50;
const ENQUEUE_REPEAT_MAX_PAUSE_MS = 1000;

/** How long `shutdown()` waits for claims under way, and then for handing back unstarted ones. */
const HAND_BACK_TIMEOUT_MS = 2000;

/** Sessions one `take-all` call visits. */
const TAKE_ALL_CHUNK = 20;

/** A ready session as `pool/sessions.lua` answers it. */
type WaitingReply = [session: string, pipeline: string, pending: number, headSeq: number, acceptedAt: number];
/** A claim as `pool/sessions.lua` answers it. */
type RunningReply = [
  session: string,
  pipeline: string,
  replica: string,
  claimedAt: number,
  pending: number,
  requestIds: string[],
];

/** One replica as `RedisQueryPool.replicas` reports it. */
export interface ReplicaView {
  id: string;
  /** Its heartbeat holds until then (ms on the pool's clock); null when its entry is gone. */
  heartbeatExpiresAt: number | null;
  alive: boolean;
  /** Turns it holds a lease on. */
  turnsRunning: number;
  /** The configuration it runs, as it last reported it (`reportConfig`); null before any report. */
  config: ConfigReport | null;
}

/** The configuration version the fleet runs: the last one a reload published. */
export interface FleetConfig {
  version: number;
  /** The digest of that configuration (the gateway's to compute). */
  digest: string;
}

/** The configuration a replica runs, as it reports it. */
export interface ConfigReport {
  /** The fleet's version it runs; 0: none it could match. */
  version: number;
  /** `current`: it runs the fleet's; `differs`: its file differs, it keeps the last one it ran. */
  state: 'current' | 'differs';
  digest: string;
  /** Why it differs. */
  detail?: string;
}

/** A `QueryPool` shared by replicas, plus what only its owner calls. */
export interface RedisQueryPool extends QueryPool {
  /** This replica's id in leases and heartbeats. */
  readonly replicaId: string;
  /** Turns this replica holds a lease on now. */
  readonly heldTurns: number;
  /** Gives up every turn held now (`onLeaseLost` for each): they may no longer run here. */
  giveUpTurns(): void;
  /**
   * The replicas sharing the pool and the turns each runs now, for operators: live ones and those
   * whose heartbeat lapsed but whose entry or leases remain (`alive: false`).
   */
  replicas(): Promise<ReplicaView[]>;
  /** Makes `digest` the fleet's configuration, run by this replica; returns its new version. */
  publishConfig(digest: string): Promise<number>;
  /** The fleet's configuration version; null before any was published. */
  fleetConfig(): Promise<FleetConfig | null>;
  /** Tells the other replicas (`replicas()`) which configuration this one runs. */
  reportConfig(report: ConfigReport): Promise<void>;
  /**
   * Redis answers and evicts nothing (`maxmemory-policy noeviction`), and live replicas do not
   * run another configuration; for `/readyz`.
   */
  health(): Promise<StoreHealth>;
  /**
   * Stops the timers, renewals and subscription, hands back unrun the claims that never started
   * (answered after this began, or never answered; bounded), leaves the live replicas and closes
   * the connections. Turns still held are given up (`onLeaseLost`): their leases expire and
   * another replica runs them again. Drain the controller first.
   */
  shutdown(): Promise<void>;
}

/**
 * The query pool in Redis (docs/design.md §5): several replicas share one pool; every transition
 * is one Lua script (`lua/`), so per-session order and the slot limits hold across replicas.
 * Connects, registers this replica's configuration (refused with `SB_STORE_CONFIG_MISMATCH`
 * while live replicas run another), and subscribes to wake-ups before it resolves.
 */
export async function createRedisQueryPool(options: RedisQueryPoolOptions): Promise<RedisQueryPool> {
  const settings = { ...DEFAULTS, ...options };
  const { permits } = options;
  const { leaseMs, renewEveryMs, fenceAfterMs, refusalRetryAfterMs } = settings;
  const timingProblems = leaseTimingProblems(
    { leaseMs, renewEveryMs, fenceAfterMs },
    FAIL_FAST_OPTIONS.commandTimeout,
  );
  // Not a finite window, an unanswered enqueue would be repeated for ever (NaN) or remembered
  // for ever (Infinity).
  const { enqueueRepeatForMs } = settings;
  if (!Number.isFinite(enqueueRepeatForMs) || enqueueRepeatForMs < 0)
    timingProblems.push(
      `enqueueRepeatForMs: must be 0 or a positive number of ms, got ${enqueueRepeatForMs}`,
    );
  if (timingProblems.length > 0) {
    throw new SwitchboardError('SB_CONFIG_INVALID', {
      message: `the redis query pool's timing is invalid:\n${timingProblems.join('\n')}`,
      details: { problems: timingProblems },
    });
  }
  if (options.outbox !== undefined)
    checkOutboxPartitions(options.outbox.keyPrefixes, options.prefix, options.partitions ?? 1);
  const logger = (options.logger ?? silentLogger).child({ component: 'pool.redis' });
  const replicaId = options.replicaId ?? defaultReplicaId();
  const keys = poolKeysOf(options.prefix);
  const dedupKey = `${keys.prefix}dedup`;
  const connection = await openPoolConnection({
    createClient: clientFactoryOf(options),
    prefix: options.prefix,
    keys,
    replicaId,
    now: options.now,
    clockRemeasureEveryMs: settings.clockRemeasureEveryMs,
    retryAfterMs: refusalRetryAfterMs,
    replication: options.replication,
    logger,
  });
  const { client, subscriber, now } = connection;
  let shared: SharedConfig = {
    concurrency: options.concurrency,
    limits: options.limits,
    pipelines: options.pipelines,
    tenants: options.tenants,
  };
  let fingerprint = fingerprintOf(shared, options.partitions);

  /** Stores this replica's configuration, or refuses it while live replicas run another. */
  async function register(): Promise<void> {
    const [registered, stored] = await connection.call<[number, string?]>('pool/register', [
      now() + leaseMs,
      fingerprint,
      ...configFieldsOf(shared),
    ]);
    if (registered !== 1) throw configMismatch(fingerprint, stored as string);
  }

  /** Runs a script; Redis failures become `SB_STORE_UNAVAILABLE`. */
  async function run<Reply>(script: ScriptOf<'pool'>, ...args: Array<string | number>): Promise<Reply> {
    try {
      return await connection.call<Reply>(script, args);
    } catch (err) {
      const lostConfig = err instanceof Error && err.message.startsWith(NO_CONFIG_REPLY);
      if (!lostConfig) throw storeFailure(err, refusalRetryAfterMs);
    }
    // Redis lost its data (restarted without persistence, or flushed): join again and go on.
    logger.error(
      { script },
      'pool configuration missing in redis: registering again; what was queued is lost',
    );
    try {
      await register();
      return await connection.call<Reply>(script, args);
    } catch (err) {
      throw storeFailure(err, refusalRetryAfterMs);
    }
  }

  const runnableListeners = new Set<() => void>();
  const leaseLostListeners = new Set<(token: string) => void>();
  /** Tokens of claims whose answer never arrived: the next claim repeats them (idempotent by token). */
  const unansweredClaims: string[] = [];
  /**
   * Held tokens whose last settlement call got no answer, each with the lease token that call
   * claimed the next turn under ('' for none): Redis may have applied it, so the next call for
   * the token says it repeats one with the same next token, and finding the first call's
   * tombstone answers `settled` (and the turn it claimed) instead of `lost`
   * (lua/pool/includes/settlement.lua).
   */
  const unansweredSettlements = new Map<string, string>();
  /**
   * Settlement calls sent and not answered yet. Each frees its turn's slot as Redis applies it (or
   * passes it to the turn it claims next), so the share `claimsInStep` checks leaves them out: an
   * enqueue racing a settlement whose claim found nothing takes the slot that settlement frees in
   * its own step, instead of the script announcing it and a claim round trip following.
   */
  let settlingCalls = 0;
  /**
   * Enqueue calls sent with a claim and not answered yet: each may hold a turn once answered, so
   * the share counts them, or the enqueues of one burst would all claim in their step.
   */
  let claimingEnqueues = 0;
  /** Tokens whose settlement, under way, claims in its step with their turn's permit (`permits`). */
  const endingInStep = new Set<string>();
  /** Takes the turns claimed ahead (`onClaimedAhead`); none: nothing is claimed ahead. */
  let claimedAheadTaker: ((turn: ClaimedTurn) => void) | undefined;
  /** The live replicas, as the last renewal counted them. */
  let liveReplicas = 1;

  /**
   * Whether this replica claims in the same step as its own write (an enqueue, a settlement),
   * counting the turns it holds and those its enqueues under way may claim, less those whose
   * settlement is under way: only below its share of the global slots, so that under a global
   * limit the turns spread over the fleet instead of staying with the replicas that held the slots
   * first (the share is passed by at most the settlements under way that claim a next turn too;
   * the global limit itself is Redis', exact). Above it, the script claims nothing and wakes the
   * others for what is claimable. Alone (its last renewal counted no other live replica) it
   * always claims in step: its share is every slot, which Redis counts exactly, and counting the
   * enqueues under way would only turn claims Redis could make in their step into claim round
   * trips. With `permits`, only with a free permit (a settlement's may be the permit of the turn
   * it ends).
   */
  function claimsInStep(ending: 0 | 1): boolean {
    if (permits !== undefined) return permits.takeInStep(ending);
    if (liveReplicas === 1) return true;
    const held = leases.size + claimingEnqueues - settlingCalls;
    return held < Math.ceil(shared.concurrency.global / liveReplicas);
  }
  /**
   * Request ids whose enqueue may have been applied though no call got an answer, until Redis
   * forgets them (`performance.now()` ms): the same message offered again is a repeat of it, and
   * is answered what Redis answered then. Any other call is judged anew — a second replay of one
   * dead letter is a duplicate, not a repeat. Entries are added in the order they expire.
   */
  const unansweredEnqueues = new Map<string, number>();
  /** Claim calls on their way: `shutdown()` waits for them (bounded) to hand their turns back. */
  const claimsUnderWay = new Set<Promise<unknown>>();
  const tombstoneMs = fenceAfterMs + TOMBSTONE_MARGIN_MS;
  // An accepted enqueue is remembered by its request id longer than its caller repeats it, by the
  // tombstones' margin (another replica, on its own clock, may purge it).
  const enqueueRememberedMs = settings.enqueueRepeatForMs + TOMBSTONE_MARGIN_MS;
  let closed = false;
  let shutDown = false;
  /**
   * Set while live replicas run another configuration than this one (found by a renewal after
   * this replica's heartbeat lapsed): enqueues are refused with it and claims find nothing.
   */
  let mismatch: SwitchboardError | undefined;

  function notify(): void {
    for (const listener of runnableListeners) listener();
  }

  const wakeTimer = new WakeTimer(() => void wake(), now);

  /** Acts on what a script said: wakes the listeners when a claim may succeed, arms the timer. */
  function apply(state: RunnableState): void {
    if (state.nextDueAt >= 0) wakeTimer.arm(state.nextDueAt);
    if (state.claimable) notify();
  }

  function logReclaimed(reclaimed: ReclaimedReply[]): void {
    for (const [token, session, pipeline, holder, requestIds] of reclaimed) {
      logger.error(
        { turnId: turnIdOf(requestIds), token, session, pipeline, holder, reclaimedBy: replicaId },
        'lease expired: the replica holding the turn stopped renewing it; its messages go back to the head of their session',
      );
    }
  }

  async function wake(): Promise<void> {
    try {
      const [claimable, nextDueAt, reclaimed] = await run<[number, number, ReclaimedReply[]]>('pool/wake');
      logReclaimed(reclaimed);
      apply(runnableStateOf(claimable, nextDueAt));
    } catch (err) {
      // The renewal round is the safety net: it reports the state again within renewEveryMs.
      logger.warn({ err }, 'wake-up check failed: retrying with the next renewal');
    }
  }

  // Other replicas announce work on the channel; this replica's own announcements come back too.
  subscriber.on('message', (_channel: string, from: string) => {
    if (from !== replicaId) notify();
  });
  // Announcements made while the subscriber was away are lost: look for work once it is back.
  subscriber.on('ready', () => void wake());
  try {
    // The deployment's own slot records how many partitions it has.
    const ownsCount = isDeploymentPrefix(options.prefix);
    if (ownsCount) await checkPartitionCount(client, options.prefix, options.partitions ?? 1);
    await register();
    if (ownsCount) await recordPartitionCount(client, options.prefix, options.partitions ?? 1);
    await subscriber.subscribe(keys.runnableChannel);
  } catch (err) {
    await connection.close();
    throw storeFailure(err, refusalRetryAfterMs);
  }

  /** Whether this replica could register its configuration again (no other replica is alive). */
  async function registerAgain(): Promise<boolean> {
    try {
      await register();
    } catch (err) {
      if (isSwitchboardError(err, 'SB_STORE_CONFIG_MISMATCH')) return false;
      throw err;
    }
    logger.warn(
      {},
      'config replaced while this replica was silent; no other replica is alive: registered this configuration again',
    );
    return true;
  }

  /** Live replicas run another configuration: give up every turn and refuse work until they are gone. */
  function refuseWork(stored: string): void {
    const refusal = configMismatch(fingerprint, stored, refusalRetryAfterMs);
    const known = mismatch?.message === refusal.message;
    mismatch = refusal;
    leases.giveUpAll();
    if (known) return;
    logger.error(
      { differences: differencesOf(fingerprint, stored) },
      'config mismatch: live replicas run other limits or pipeline policies; this replica gave up its turns and refuses work until they are gone',
    );
  }

  function acceptWorkAgain(): void {
    if (mismatch === undefined) return;
    mismatch = undefined;
    logger.info({}, 'config mismatch resolved: this replica takes work again');
  }

  type RenewReply = [number, number, string[], number] | ['config_mismatch', string];
  const isMismatch = (reply: RenewReply): reply is ['config_mismatch', string] =>
    reply[0] === 'config_mismatch';

  const leases = new LeaseKeeper({
    async renew(tokens, fenceAt): Promise<Renewal> {
      const startedAt = now();
      // Judged on Redis' TIME, so only when the pool's clock is Redis' (the default).
      const fenceArg = options.now === undefined ? fenceAt : '';
      const renewal = () => run<RenewReply>('pool/renew', leaseMs, fingerprint, fenceArg, ...tokens);
      let reply = await renewal();
      if (isMismatch(reply) && options.reconcile !== undefined) {
        // Waited for at most one renewal period: the leases held must not lapse meanwhile.
        const reconciled = options
          .reconcile()
          .catch((err: unknown) => logger.warn({ err }, 'reloading to the fleet configuration failed'));
        await within(reconciled, renewEveryMs);
        reply = await renewal();
      }
      if (isMismatch(reply) && (await registerAgain())) reply = await renewal();
      if (isMismatch(reply)) {
        refuseWork(reply[1]);
        // Nothing is held any more: nothing to renew.
        return { lost: [], expiresAt: startedAt + leaseMs };
      }
      acceptWorkAgain();
      const [claimable, nextDueAt, lost, live] = reply;
      liveReplicas = Math.max(1, live);
      apply(runnableStateOf(claimable, nextDueAt));
      return { lost, expiresAt: startedAt + leaseMs };
    },
    onLost(token) {
      if (endingInStep.delete(token)) permits?.endingGone();
      // Its unanswered settlement may have claimed a next turn: the next claim repeats that token.
      const next = unansweredSettlements.get(token);
      if (next !== undefined && next !== '') repeatClaim(next);
      unansweredSettlements.delete(token);
      for (const listener of leaseLostListeners) listener(token);
    },
    now,
    renewEveryMs,
    fenceAfterMs,
    logger,
  });
  await wake();

  /**
   * A turn may have been claimed under `token` by a call whose reply was lost: the next claim
   * repeats the token, now rather than when something else wakes the claim loop (the script that
   * claimed it told no other replica, and its lease would hold it until it expired).
   */
  function repeatClaim(token: string): void {
    unansweredClaims.push(token);
    notify();
  }

  /** Claims answered after `shutdown()` began: never started, handed back by the shutdown. */
  const claimedAfterShutdown: string[] = [];

  async function claimOnce(): Promise<ClaimedTurn | null> {
    const repeated = unansweredClaims.shift();
    const token = repeated ?? randomUUID();
    let reply: [number, number, ReclaimedReply[], TurnReply];
    try {
      // Only a repeated token may hold a lease already: the script looks it up then alone.
      reply = await run('pool/claim', token, leaseMs, repeated === undefined ? '0' : '1');
    } catch (err) {
      unansweredClaims.push(token);
      throw err;
    }
    const [claimable, nextDueAt, reclaimed, turnReply] = reply;
    logReclaimed(reclaimed);
    const answered = turnOf(turnReply, claimable);
    // A repeated token whose turn this replica got meanwhile (a settlement's repeat answered it).
    const turn = answered !== null && leases.holds(answered.lease.token) ? null : answered;
    // Answered once this replica may no longer start it: nobody would renew the lease, and
    // leaving it to expire would count an attempt that never ran (docs/design.md §5).
    if (turn !== null && shutDown) claimedAfterShutdown.push(token);
    else if (turn !== null && mismatch !== undefined) void handBack(token);
    if (shutDown || mismatch !== undefined) return null;
    if (turn !== null) {
      leases.hold(turn.lease);
      crashPoint('claim.after-attempt-mark');
    }
    // The timer only: the caller claims again while the turn says `more`, and the script told
    // the other replicas about work it reclaimed.
    apply(runnableStateOf(0, nextDueAt));
    return turn;
  }

  /**
   * Takes a turn another script claimed for this replica in the same step as its own write (an
   * enqueue's, a settlement's): holds its lease and hands it to `take`, or hands it back unrun
   * when nobody takes it now (the replica is stopping).
   */
  function handOver(
    reply: TurnReply,
    claimable: number,
    take: ((turn: ClaimedTurn) => void) | undefined,
  ): void {
    const turn = turnOf(reply, claimable);
    // Null, or held here already: a repeat answered the turn a claim of its token got meanwhile.
    if (turn === null || leases.holds(turn.lease.token)) return;
    if (take === undefined || shutDown || mismatch !== undefined) {
      void handBack(turn.lease.token);
      return;
    }
    leases.hold(turn.lease);
    crashPoint('claim.after-attempt-mark');
    take(turn);
  }

  /**
   * Gives back a claim that never started (`abandon` with `ran: false`: its attempt is undone),
   * best effort: if it fails, the lease expires and the attempt counts.
   */
  async function handBack(token: string): Promise<void> {
    try {
      await run('pool/abandon', token, '0', tombstoneMs, '0');
    } catch (err) {
      logger.warn({ err, token }, 'claim hand-back failed: its lease expires and the attempt counts');
    }
  }

  /**
   * Calls `enqueue` until Redis answers, for at most `enqueueRepeatForMs`, once a call may have
   * been applied without its reply reaching here (`mayHaveRun`): deciding anything before an
   * answer would refuse a message that was taken, whose sender then sends it again as a second
   * one. The same request id, with the repeat flag, makes a repeat answer what the applied call answered
   * (lua/pool/includes/enqueue-tokens.lua). A call that surely did not run (Redis down: nothing
   * is sent) fails at once, as before. A replica that dies while it repeats leaves the message
   * taken but never acknowledged (its sender may send it again), and its drops kept with the
   * enqueue for another replica to record. A repeat still unanswered at the deadline is not
   * waited for (it is one more repeat, answered or not): the caller holds its sender's request
   * for `enqueueRepeatForMs`, not a command timeout longer.
   */
  async function untilAnswered<Reply>(
    messageId: string,
    requestId: string,
    enqueue: (repeat: '0' | '1') => Promise<Reply>,
  ): Promise<Reply> {
    const deadline = performance.now() + settings.enqueueRepeatForMs;
    let pauseMs = ENQUEUE_REPEAT_PAUSE_MS;
    let unanswered = unansweredEnqueues.has(requestId) ? 1 : 0;
    let lastFailure: unknown;
    for (;;) {
      try {
        const answer =
          unanswered === 0 ? await enqueue('0') : await within(enqueue('1'), deadline - performance.now());
        if (answer === 'timeout') throw lastFailure;
        const reply = answer as Reply;
        unansweredEnqueues.delete(requestId);
        if (unanswered > 0)
          logger.warn(
            { messageId, unanswered },
            'enqueue reply lost: answered by a repeat with the same request id',
          );
        return reply;
      } catch (err) {
        if (!isSwitchboardError(err, 'SB_STORE_UNAVAILABLE')) throw err;
        if (mayHaveRun(err)) unanswered += 1;
        lastFailure = err;
        const leftMs = deadline - performance.now();
        if (unanswered > 0 && (leftMs <= 0 || shutDown)) rememberUnanswered(requestId);
        if (unanswered === 0 || leftMs <= 0 || shutDown) throw err;
        await new Promise((resolve) => setTimeout(resolve, Math.min(pauseMs, leftMs)));
        pauseMs = Math.min(pauseMs * 2, ENQUEUE_REPEAT_MAX_PAUSE_MS);
      }
    }
  }

  /** Notes that `requestId`'s enqueue may have been applied unanswered, while Redis remembers it. */
  function rememberUnanswered(requestId: string): void {
    const at = performance.now();
    for (const [id, forgetAt] of unansweredEnqueues) {
      if (forgetAt > at) break;
      unansweredEnqueues.delete(id);
    }
    unansweredEnqueues.delete(requestId);
    // Forgotten here before Redis forgets it: a repeat must find what it repeats.
    unansweredEnqueues.set(requestId, at + settings.enqueueRepeatForMs + TOMBSTONE_MARGIN_MS / 2);
  }

  async function settle(
    turn: Turn,
    script: 'pool/complete' | 'pool/retry' | 'pool/abandon',
    options: SettleOptions | undefined,
    args: Array<string | number>,
    answer?: StoredAnswer,
  ): Promise<Settlement> {
    const token = turn.lease?.token;
    if (token === undefined) return 'lost';
    // Released once answered (or failed for good), not before: while the store is unreachable
    // the caller writes the settlement again (docs/design.md §5 "Redis down"), and the lease must
    // hold meanwhile, or another replica would run the turn again; fencing ends the wait if Redis
    // stays away.
    const unanswered = unansweredSettlements.get(token);
    const repeat = unanswered === undefined ? '0' : '1';
    const claimNext = options?.claimNext;
    let nextToken: string;
    settlingCalls += 1;
    if (unanswered === undefined) {
      const claims = claimNext !== undefined && script !== 'pool/abandon' && claimsInStep(1);
      nextToken = claims ? randomUUID() : '';
    } else if (unanswered !== '' && permits !== undefined && !permits.takeInStep(1)) {
      // No permit for the turn the first call may have claimed: the next claim repeats its token.
      repeatClaim(unanswered);
      nextToken = '';
    } else {
      // A repeat claims under the first call's token, so that it answers the turn that call claimed.
      nextToken = unanswered;
    }
    // Given back once the claim is answered (held by then) or failed; while it is under way the
    // claim uses the ending turn's permit, unless that turn is given up meanwhile (`onLost`).
    const permitTaken = permits !== undefined && nextToken !== '';
    if (permitTaken) endingInStep.add(token);
    try {
      return await settleUnder(turn, token, script, claimNext, repeat, nextToken, args, answer);
    } finally {
      settlingCalls -= 1;
      if (permitTaken) permits.put(endingInStep.delete(token) ? 1 : 0);
    }
  }

  async function settleUnder(
    turn: Turn,
    token: string,
    script: 'pool/complete' | 'pool/retry' | 'pool/abandon',
    claimNext: SettleOptions['claimNext'],
    repeat: string,
    nextToken: string,
    args: Array<string | number>,
    answer: StoredAnswer | undefined,
  ): Promise<Settlement> {
    const claimArgs = script === 'pool/abandon' ? [] : [nextToken, leaseMs];
    let reply: [Settlement, number?, number?, TurnReply?, AddedReply?];
    try {
      reply = await run(script, token, repeat, tombstoneMs, ...claimArgs, ...args);
    } catch (err) {
      if (isSwitchboardError(err, 'SB_STORE_UNAVAILABLE')) {
        // Its answer may be stored, and leased to the addition's claim, unless it never left.
        answer?.addition.unanswered(err);
        // A token already answered or given up is not held: a later call for it is no repeat.
        if (leases.holds(token)) unansweredSettlements.set(token, nextToken);
        else if (nextToken !== '') repeatClaim(nextToken);
        throw err;
      }
      // Writing it again would fail the same way: renewing the lease meanwhile would keep the
      // session stuck until this replica stops. Let it expire, so the turn runs again elsewhere.
      unansweredSettlements.delete(token);
      if (leases.holds(token)) {
        leases.release(token);
        logger.error(
          { err, script, token, turnId: turn.id, session: turn.session },
          'settlement failed for good: releasing the lease; the turn runs again once it expires',
        );
      }
      throw err;
    }
    const [outcome, claimable, nextDueAt, next, added] = reply;
    unansweredSettlements.delete(token);
    leases.release(token);
    if (outcome === 'settled') {
      handOver(next ?? [], claimable as number, claimNext);
      apply(runnableStateOf(claimable as number, nextDueAt as number));
      // No `added`: a repeat answered from the first call's tombstone; that call stored the answer,
      // and its claim, if it made one, is the outbox's next claim (`unanswered`).
      if (answer !== undefined)
        answer.replies.stored(
          added === undefined ? { result: 'duplicate', claim: null } : await answer.addition.answered(added),
        );
    }
    return outcome;
  }

  const outboxPrefix = replyOutboxKeysOf(options.prefix).prefix;
  /** The answer a complete stores with `outbox`, or none (without one, `replies` is the caller's to store). */
  function answerOf(replies: SettledReplies | undefined): StoredAnswer | undefined {
    if (replies === undefined || options.outbox === undefined) return undefined;
    const addition = options.outbox.additionOf(replies.delivery, replies.claimAt);
    // Another slot's keys in the complete script: Redis Cluster refuses it, and one Redis would
    // store the answer where this pool's outbox does not look. Refused at construction already
    // (checkOutboxPartitions): a guard against an outbox placing a chat elsewhere.
    const [additionPrefix] = addition.args;
    if (additionPrefix !== outboxPrefix)
      throw new Error(
        `redis query pool ${options.prefix}: the outbox stores delivery ${replies.delivery.id} under ${additionPrefix}, not ${outboxPrefix}`,
      );
    return { addition, replies };
  }

  const pool: RedisQueryPool = {
    durable: true,
    storesReplies: options.outbox !== undefined,
    replicaId,
    get heldTurns() {
      return leases.size;
    },
    giveUpTurns() {
      leases.giveUpAll();
    },

    async reconfigure(next) {
      const nextFingerprint = fingerprintOf(next, options.partitions);
      await run<number>('pool/reconfigure', nextFingerprint, ...configFieldsOf(next));
      shared = next;
      fingerprint = nextFingerprint;
      acceptWorkAgain();
      void wake();
    },

    async enqueue(queued, delivery, enqueueOptions): Promise<EnqueueResult> {
      // Durable: a last delivery is kept while draining too (it runs on another replica or later).
      const last = enqueueOptions?.last === true;
      if (closed && !last) return { accepted: false, reason: 'draining', retryAfterMs: refusalRetryAfterMs };
      // A last delivery is kept here too: refusing it would lose it, and the replicas running the
      // stored configuration take it.
      if (mismatch !== undefined && !last) throw mismatch;
      const args = [
        payloadOf(queued),
        queued.message.id,
        requestIdOf(queued),
        queued.session,
        queued.pipeline,
        queued.message.sender.id,
        queued.attempt,
        queued.retryAtMs ?? '',
        delivery?.key ?? '',
        delivery === undefined ? 0 : now() + delivery.ttlMs,
        last ? '1' : '0',
        queued.message.channel,
        // The outcome of a message dropped from the full session is kept until recorded.
        options.keptOutcome === undefined ? '' : now() + KEPT_OUTCOME_LEASE_MS,
        enqueueRememberedMs,
      ];
      // The turn claimed with the enqueue is this replica's to run: the same token on every
      // repeat, so that a repeat answers the turn the first call claimed.
      const claims = claimedAheadTaker !== undefined && !closed && mismatch === undefined && claimsInStep(0);
      const claimToken = claims ? randomUUID() : '';
      if (claims) claimingEnqueues += 1;
      let reply: [string, number?, number?, MessageReply[]?, TurnReply?];
      try {
        reply = await untilAnswered(queued.message.id, requestIdOf(queued), (repeat) =>
          run('pool/enqueue', ...args, repeat, claimToken, leaseMs),
        );
        if (claims) handOver(reply[4] ?? [], reply[1] as number, claimedAheadTaker);
      } catch (err) {
        // It may have been applied, its claim with it: the next claim repeats the token.
        if (claimToken !== '') repeatClaim(claimToken);
        throw err;
      } finally {
        if (claims) {
          claimingEnqueues -= 1;
          permits?.put();
        }
      }
      const [outcome, claimable, nextDueAt, overflowed] = reply;
      if (outcome === 'duplicate') return { accepted: false, reason: 'duplicate' };
      if (outcome === 'queue_full')
        return { accepted: false, reason: 'queue_full', retryAfterMs: refusalRetryAfterMs };
      apply(runnableStateOf(claimable as number, nextDueAt as number));
      return { accepted: true, overflowed: (overflowed ?? []).map(queuedOf) };
    },

    async claim() {
      if (shutDown || mismatch !== undefined) return null;
      if (permits !== undefined && !permits.take()) return null;
      const attempt = claimOnce();
      claimsUnderWay.add(attempt);
      try {
        return await attempt;
      } finally {
        claimsUnderWay.delete(attempt);
        permits?.put();
      }
    },

    async complete(turn, ended, settleOptions) {
      // Built first: a delivery refused here rejects the complete before anything changed.
      const answer = answerOf(settleOptions?.replies);
      const kept = keptOutcomeArgs(ended, options.keptOutcome, now() + KEPT_OUTCOME_LEASE_MS);
      const args = [kept.dueAt, ...(answer?.addition.args ?? NO_ADDITION_ARGS), ...kept.pairs];
      return crashAfter('settle.after-complete', settle(turn, 'pool/complete', settleOptions, args, answer));
    },

    retry(turn, delayMs, finalIds = [], ended, settleOptions) {
      const boundedDelayMs = Number.isNaN(delayMs) ? 0 : Math.min(Math.max(0, delayMs), MAX_RETRY_DELAY_MS);
      const kept = keptOutcomeArgs(ended, options.keptOutcome, now() + KEPT_OUTCOME_LEASE_MS);
      return crashAfter(
        'settle.after-retry',
        settle(turn, 'pool/retry', settleOptions, [
          boundedDelayMs,
          kept.dueAt,
          finalIds.length,
          ...finalIds,
          ...kept.pairs,
        ]),
      );
    },

    abandon(turn, abandonOptions = { ran: true }) {
      return settle(turn, 'pool/abandon', undefined, [abandonOptions.ran ? '1' : '0']);
    },

    onRunnable(listener) {
      runnableListeners.add(listener);
      return () => runnableListeners.delete(listener);
    },

    onClaimedAhead(taker) {
      claimedAheadTaker = taker;
      return () => {
        if (claimedAheadTaker === taker) claimedAheadTaker = undefined;
      };
    },

    onLeaseLost(listener) {
      leaseLostListeners.add(listener);
      return () => leaseLostListeners.delete(listener);
    },

    // The messages live in Redis: nothing to reload. A dead replica's turns come back by lease
    // expiry, through the claims of whoever is alive.
    async recover() {
      return [];
    },

    close() {
      closed = true;
    },

    // Takes the waiting messages of every replica, not this one's only: the controller calls it
    // only for a pool that is not durable, so nothing calls it here (docs/design.md §2 "Shutdown").
    async takeAll() {
      const taken = [];
      let cursor = '0';
      do {
        const [next, messages] = await run<[string, MessageReply[]]>('pool/take-all', cursor, TAKE_ALL_CHUNK);
        taken.push(...messages.map(queuedOf));
        cursor = next;
      } while (cursor !== '0');
      return taken;
    },

    async stats(): Promise<PoolStats> {
      const [pending, inflight, sessions, byPipeline, waiting] =
        await run<[number, number, number, string[], Array<string | number>]>('pool/stats');
      const at = now();
      const inflightByPipeline: Record<string, number> = {};
      const pendingByPipeline: Record<string, number> = {};
      const oldestWaitMsByPipeline: Record<string, number> = {};
      for (const policy of options.pipelines) {
        inflightByPipeline[policy.id] = 0;
        pendingByPipeline[policy.id] = 0;
        oldestWaitMsByPipeline[policy.id] = 0;
      }
      for (let index = 0; index < byPipeline.length; index += 2) {
        inflightByPipeline[byPipeline[index] as string] = Number(byPipeline[index + 1]);
      }
      for (let index = 0; index < waiting.length; index += 3) {
        const pipeline = String(waiting[index]);
        const acceptedAt = Number(waiting[index + 2]);
        pendingByPipeline[pipeline] = Number(waiting[index + 1]);
        oldestWaitMsByPipeline[pipeline] = acceptedAt < 0 ? 0 : Math.max(0, at - acceptedAt);
      }
      return { pending, inflight, sessions, inflightByPipeline, pendingByPipeline, oldestWaitMsByPipeline };
    },

    async sessions(limit, pipelines): Promise<SessionsView> {
      const [waiting, running] = await run<[WaitingReply[], RunningReply[]]>(
        'pool/sessions',
        limit,
        pipelines === undefined ? '0' : '1',
        ...(pipelines ?? []),
      );
      const at = now();
      return {
        waiting: waiting
          .sort((a, b) => a[3] - b[3])
          .slice(0, limit)
          .map(([session, pipeline, pending, , acceptedAt]) => ({
            session,
            pipeline,
            pending,
            oldestWaitMs: Math.max(0, at - acceptedAt),
          })),
        running: running
          .sort((a, b) => a[3] - b[3])
          .map(([session, pipeline, replica, claimedAt, pending, requestIds]) => ({
            turnId: turnIdOf(requestIds),
            session,
            pipeline,
            messages: requestIds.length,
            ageMs: Math.max(0, at - claimedAt),
            replica,
            pending,
          })),
      };
    },

    async replicas() {
      const at = now();
      const rows = await run<Array<[string, number, number, string | null]>>('pool/replicas');
      return rows.map(([id, deadline, turnsRunning, report]) => ({
        id,
        heartbeatExpiresAt: deadline < 0 ? null : deadline,
        alive: deadline > at,
        turnsRunning,
        config: report === null || report === undefined ? null : configReportOf(report),
      }));
    },

    publishConfig: (digest) => run<number>('pool/publish-config', digest),

    async fleetConfig() {
      const [version, digest] = await client.hmget(`${keys.prefix}config-version`, 'version', 'digest');
      return typeof version === 'string' && typeof digest === 'string'
        ? { version: Number(version), digest }
        : null;
    },

    async reportConfig(report) {
      await client.hset(`${keys.prefix}config-replicas`, replicaId, configReportText(report, now()));
    },

    async seen(deliveryKey) {
      // The enqueue script scores a key with its expiry on the caller's clock (`now() + ttlMs`).
      const expiresAt = await client.zscore(dedupKey, deliveryKey);
      return expiresAt !== null && Number(expiresAt) > now();
    },

    async locate(messageId) {
      const reply = await run<LocateReply>('pool/locate', messageId);
      return locatedOf(reply);
    },

    async health() {
      if (mismatch !== undefined) {
        const differences = (mismatch.details as { differences: string[] }).differences.join('; ');
        return { ok: false, detail: `config mismatch with the live replicas: ${differences}` };
      }
      return checkRedisHealth(client, options.prefix, options.replication?.replicas ?? 0);
    },

    async shutdown() {
      closed = true;
      shutDown = true;
      leases.stop();
      wakeTimer.cancel();
      // Claims that never started are handed back, not left to expire with an attempt counted:
      // those answered from now on, and those whose answer never came (Redis may have applied them).
      await within(Promise.allSettled([...claimsUnderWay]), HAND_BACK_TIMEOUT_MS);
      const unstarted = [...unansweredClaims.splice(0), ...claimedAfterShutdown.splice(0)];
      await within(Promise.allSettled(unstarted.map(handBack)), HAND_BACK_TIMEOUT_MS);
      // Leaves the live replicas at once, its config report too (no registration would remove a
      // report of a replica out of the set); with Redis gone, the heartbeat expires by itself.
      await client
        .multi()
        .zrem(keys.replicas, replicaId)
        .hdel(`${keys.prefix}config-replicas`, replicaId)
        .exec()
        .catch(() => {});
      await connection.close();
    },
  };
  return pool;
}

function clientFactoryOf(options: RedisQueryPoolOptions): RedisClientFactory {
  if (options.createClient !== undefined) return options.createClient;
  if (options.url !== undefined) return redisClientFactory(options.url);
  throw new SwitchboardError('SB_CONFIG_INVALID', {
    message: 'the redis query pool needs `url` or `createClient`',
  });
}

/**
 * A config report as `pool/publish-config` and `reportConfig` store it:
 * `version|state|at|digest|detail`, `at` on the pool's clock (`pool/replicas` forgets old ones).
 */
function configReportText(report: ConfigReport, at: number): string {
  return [report.version, report.state, at, report.digest, report.detail ?? ''].join('|');
}

function configReportOf(text: string): ConfigReport {
  const [version, state, , digest, ...detail] = text.split('|');
  const joined = detail.join('|');
  return {
    version: Number(version),
    state: state === 'differs' ? 'differs' : 'current',
    digest: digest ?? '',
    ...(joined === '' ? {} : { detail: joined }),
  };
}
