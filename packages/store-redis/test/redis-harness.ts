import type { Socket } from 'node:net';
import { randomUUID } from 'node:crypto';
import {
  type Logger,
  type Outcome,
  type PipelinePolicyInput,
  PipelinePolicySchema,
  type QueuedMessage,
  type Turn,
} from '@switchboard/core';
import { type QueryPoolFactory, queuedMessageFixture } from '@switchboard/contracts';
import { REDIS_URL, removePoolKeys, startPrivateRedis } from '@switchboard/testkit/redis';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll } from 'vitest';
import {
  FAIL_FAST_OPTIONS,
  createPartitionedQueryPool,
  createRedisQueryPool,
  type PartitionedQueryPoolOptions,
  createRedisReplyOutbox,
  type RedisQueryPool,
  type RedisQueryPoolOptions,
  type RedisReplyOutbox,
  type RedisReplyOutboxOptions,
} from '../src/index.js';
import { type ScriptOf, defineLuaScripts, runScript } from '../src/lua-scripts.js';
import { poolKeysOf } from '../src/pool-keys.js';
import { partitionOf, partitionPrefixOf } from '../src/partitions.js';

export {
  REDIS_URL,
  poolKeyNames,
  redisReachable,
  removePoolKeys,
  startPrivateRedis,
} from '@switchboard/testkit/redis';

/**
 * A Redis of the enclosing `describe`'s own, for tests that stop it or hold its writes with
 * `CLIENT PAUSE` (on the shared one that would stall every other test): the server (`stop`,
 * `start`), its URL, pools on it, a client for pausing and reading keys, and its pool's
 * `inflight` count.
 */
export function usePrivateRedis() {
  let redis: Awaited<ReturnType<typeof startPrivateRedis>> | undefined;
  let admin: Redis | undefined;
  const url = () => (redis as { url: string }).url;
  const pools = usePools(url);
  beforeAll(async () => {
    redis = await startPrivateRedis();
    admin = new Redis(redis.url);
  });
  afterAll(async () => {
    admin?.disconnect();
    await redis?.remove();
  });
  return {
    url,
    pools,
    get server() {
      return redis as Awaited<ReturnType<typeof startPrivateRedis>>;
    },
    get admin(): Redis {
      return admin as Redis;
    },
    inflight: async () => Number(await (admin as Redis).hget(`{${pools.prefix}}:counts`, 'inflight')),
  };
}

/** A clock the test moves by hand. */
export function manualClock(startMs = Date.UTC(2025, 0, 1)) {
  let nowMs = startMs;
  return {
    now: () => nowMs,
    advance(ms: number) {
      nowMs += ms;
    },
  };
}

export interface PoolSetup extends Partial<Omit<RedisQueryPoolOptions, 'pipelines'>> {
  /** Each with the tenant it belongs to (none: the default tenant). */
  pipelines?: Array<PipelinePolicyInput & { tenant?: string }>;
}

/**
 * Pools of one test on one random prefix of the Redis at `url()`, shut down and their keys
 * removed after the test. Each `open` is another replica on the same prefix.
 */
export function usePools(url: () => string = () => REDIS_URL) {
  const opened: RedisQueryPool[] = [];
  const prefixes = new Set<string>();
  let prefix = `sb-test-${randomUUID()}`;

  afterEach(async () => {
    for (const pool of opened.splice(0)) await pool.shutdown();
    for (const used of prefixes) await removePoolKeys(url(), used);
    prefixes.clear();
    prefix = `sb-test-${randomUUID()}`;
  });

  return {
    get prefix() {
      return prefix;
    },
    async open(setup: PoolSetup = {}): Promise<RedisQueryPool> {
      const { pipelines = [{ id: 'p' }, { id: 'q' }], ...rest } = setup;
      const options: RedisQueryPoolOptions = {
        url: url(),
        prefix,
        concurrency: { global: 20, perSession: 1 },
        limits: { maxPending: 10_000, maxPendingPerSession: 500 },
        pipelines: pipelines.map(({ tenant, ...input }) => ({
          ...PipelinePolicySchema.parse(input),
          tenant,
        })),
        ...rest,
      };
      prefixes.add(options.prefix);
      const pool = await createRedisQueryPool(options);
      opened.push(pool);
      return pool;
    },
    /** Shuts `pool` down before the test ends (its keys are still removed afterwards). */
    async shutdown(pool: RedisQueryPool) {
      opened.splice(opened.indexOf(pool), 1);
      await pool.shutdown();
    },
  };
}

/** The lease of the reply outboxes `useReplyOutboxes` opens, unless a test gives another. */
export const REPLY_OUTBOX_LEASE_MS = 30_000;

/** Outboxes of one test on one random prefix, each another replica; closed and their keys removed after. */
export function useReplyOutboxes(url: () => string = () => REDIS_URL) {
  const opened: RedisReplyOutbox[] = [];
  let prefix = `sb-test-${randomUUID()}`;
  afterEach(async () => {
    for (const outbox of opened.splice(0)) await outbox.close();
    await removePoolKeys(url(), prefix);
    prefix = `sb-test-${randomUUID()}`;
  });
  return {
    get prefix() {
      return prefix;
    },
    async open(options: Partial<RedisReplyOutboxOptions> = {}): Promise<RedisReplyOutbox> {
      const outbox = await createRedisReplyOutbox({
        url: url(),
        prefix,
        leaseMs: REPLY_OUTBOX_LEASE_MS,
        ...options,
      });
      opened.push(outbox);
      return outbox;
    },
    /** Closes `outbox` before the test ends, as a replica that stops. */
    async close(outbox: RedisReplyOutbox) {
      opened.splice(opened.indexOf(outbox), 1);
      await outbox.close();
    },
  };
}

let sequence = 0;
/** A message for `session` (one sender per session, so debounce may merge a session's messages). */
export function queued(
  session: string,
  acceptedAt: number,
  extra: Partial<QueuedMessage> = {},
): QueuedMessage {
  sequence += 1;
  const base = queuedMessageFixture(sequence);
  base.message.sender = { id: `sender-${session}`, is_bot: false };
  return { ...base, session, pipeline: 'p', attempt: 0, acceptedAt, ...extra };
}

/** The dead-letter outcome of each message of `turn` at `at`: what a settlement may keep. */
export function deadLetters(turn: Turn, at: number): Outcome[] {
  return turn.messages.map((message) => ({
    kind: 'dead_lettered',
    reason: 'fatal_error',
    at,
    message: message.message,
    session: message.session,
    pipeline: message.pipeline,
    turnId: turn.id,
  }));
}

/** A log line kept by `recordingLogger`. */
export interface LogLine {
  level: 'debug' | 'info' | 'warn' | 'error';
  bindings: Record<string, unknown>;
  message: string;
}

/** A logger that keeps every line, bindings included, for assertions. */
export function recordingLogger(): Logger & { lines: LogLine[] } {
  const lines: LogLine[] = [];
  const make = (inherited: Record<string, unknown>): Logger & { lines: LogLine[] } => {
    const log = (level: LogLine['level']) => (bindings: object, message: string) =>
      void lines.push({ level, bindings: { ...inherited, ...bindings }, message });
    return {
      lines,
      debug: log('debug'),
      info: log('info'),
      warn: log('warn'),
      error: log('error'),
      child: (bindings) => make({ ...inherited, ...bindings }),
    };
  };
  return make({});
}

/**
 * Calls the pool's scripts directly, as replica `replicaId`, for tests of one script's behaviour
 * (a pool on the same prefix must have registered the configuration first).
 */
export async function openScriptRunner(
  url: string,
  prefix: string,
  now: () => number,
  replicaId = 'script-runner',
) {
  const client = new Redis(url, FAIL_FAST_OPTIONS);
  await client.connect();
  await defineLuaScripts(client);
  const keys = poolKeysOf(prefix);
  return {
    client,
    keys,
    run(script: ScriptOf<'pool'>, ...args: Array<string | number>): Promise<unknown> {
      return runScript(client, script, keys.keys, [keys.prefix, now(), replicaId, ...args]);
    },
    close: () => client.quit(),
  };
}

/** Deletes the keys of every partition of `prefix`; partition 0 is its own slot (with the global permits). */
export async function removePartitionedKeys(prefix: string, partitions: number): Promise<void> {
  for (let index = 0; index < partitions; index += 1)
    await removePoolKeys(REDIS_URL, partitionPrefixOf(prefix, index));
}

/** A session or chat key in partition `index` of `partitions`: the first `<tag>-<n>` that falls there. */
export function keyInPartition(index: number, partitions: number, tag: string): string {
  for (let n = 0; ; n += 1) if (partitionOf(`${tag}-${n}`, partitions) === index) return `${tag}-${n}`;
}

/**
 * A contract suite's stores of one test on the shared Redis: `store` and each `peer` another
 * replica opened by `open` on one fresh `<tag>-<uuid>` prefix; `close` stops each in turn with
 * `stop` and removes the keys of the prefix's `partitions` partitions.
 */
export async function contractStores<Store>(
  open: (prefix: string) => Promise<Store>,
  stop: (store: Store) => Promise<void>,
  { tag = 'sb-contract', partitions = 1 }: { tag?: string; partitions?: number } = {},
): Promise<{ store: Store; peer(): Promise<Store>; close(): Promise<void> }> {
  const prefix = `${tag}-${randomUUID()}`;
  const opened: Store[] = [];
  const peer = async () => {
    const store = await open(prefix);
    opened.push(store);
    return store;
  };
  return {
    store: await peer(),
    peer,
    async close() {
      for (const store of opened) await stop(store);
      await removePartitionedKeys(prefix, partitions);
    },
  };
}

/**
 * A `queryPoolContract` factory on the shared Redis (`contractStores`): pools over `partitions`
 * partitions, or none (one pool, as `createRedisQueryPool`).
 */
export function contractPools(tag: string, partitions?: number): QueryPoolFactory {
  return ({ now, concurrency, limits, pipelines, tenants }) =>
    contractStores(
      (prefix) => {
        const options = { url: REDIS_URL, prefix, now, concurrency, limits, pipelines, tenants };
        return partitions === undefined
          ? createRedisQueryPool(options)
          : createPartitionedQueryPool({ ...options, partitions });
      },
      (pool) => pool.shutdown(),
      { tag, partitions },
    );
}

/** The shared configuration of the partition tests' pools: pipeline `p`, a global limit of `global`. */
export function partitionTestConfig(global: number) {
  return {
    concurrency: { global, perSession: 1 },
    limits: { maxPending: 10_000, maxPendingPerSession: 500 },
    pipelines: [PipelinePolicySchema.parse({ id: 'p' })],
  };
}

/**
 * Partitioned pools of one test on one fresh `<tag>-<uuid>` prefix of the shared Redis, each
 * `open` another replica over `partitions` partitions with `partitionTestConfig(global)`; shut
 * down and the keys of every partition removed after the test.
 */
export function usePartitionedPools({
  tag,
  partitions,
  global,
}: {
  tag: string;
  partitions: number;
  global: number;
}) {
  const opened: RedisQueryPool[] = [];
  let prefix = `${tag}-${randomUUID()}`;
  afterEach(async () => {
    for (const pool of opened.splice(0)) await pool.shutdown();
    await removePartitionedKeys(prefix, partitions);
    prefix = `${tag}-${randomUUID()}`;
  });
  /** Options for a pool of one partition on this test's prefix: a replica counting partitions otherwise. */
  const single = (options: Partial<RedisQueryPoolOptions> = {}): RedisQueryPoolOptions => ({
    url: REDIS_URL,
    prefix,
    ...partitionTestConfig(global),
    ...options,
  });
  return {
    get prefix() {
      return prefix;
    },
    single,
    async open(options: Partial<PartitionedQueryPoolOptions> = {}): Promise<RedisQueryPool> {
      const pool = await createPartitionedQueryPool({ ...single(), partitions, ...options });
      opened.push(pool);
      return pool;
    },
    /** Shuts `pool` down after the test too (one opened otherwise on this prefix). */
    keep(pool: RedisQueryPool): RedisQueryPool {
      opened.push(pool);
      return pool;
    },
    /** Shuts `pool` down before the test ends (its keys are still removed afterwards). */
    async shutdown(pool: RedisQueryPool) {
      opened.splice(opened.indexOf(pool), 1);
      await pool.shutdown();
    },
  };
}

/** What starting a pool is refused with; null when it starts (the pool is shut down then). */
export function refusalOf(start: Promise<{ shutdown(): Promise<void> }>): Promise<unknown> {
  return start.then(
    async (pool) => {
      await pool.shutdown();
      return null;
    },
    (err: unknown) => err,
  );
}

/** Counts the socket writes (`_write`, `_writev`) of `client`'s current connection from now on. */
export function countSocketWrites(client: Redis): { writes: number; chunks: number } {
  const socket = (client as unknown as { stream: Socket & Record<string, unknown> }).stream;
  const counted = { writes: 0, chunks: 0 };
  for (const method of ['_write', '_writev'] as const) {
    const original = socket[method] as (...args: unknown[]) => void;
    socket[method] = function (this: Socket, ...args: unknown[]) {
      counted.writes += 1;
      counted.chunks += method === '_writev' ? (args[0] as unknown[]).length : 1;
      return original.apply(this, args);
    };
  }
  return counted;
}
