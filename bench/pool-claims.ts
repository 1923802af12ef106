/**
 * Query pool claims/s: enqueue → claim → complete cycles, SETTINGS.poolConcurrency of them in
 * flight per pool (claiming as the controller does: with the enqueue, with the completion, else
 * with a claim call), each message its own session, no pipeline and no controller. The memory pool
 * is the baseline, measured in the same run; the Redis pool runs against a real Redis
 * (SETTINGS.redisUrl) as 1, 2 and 3 pools sharing one random prefix, as replicas do — all in this
 * process, so the replicas also share its CPU. claims/s = cycles ÷ time from the first enqueue to
 * the last completion, fastest of SETTINGS.poolRuns runs taken in turn.
 *
 * Redis commands per message come from `INFO commandstats` read before and after each Redis run:
 * the delta of `calls` summed over every command — those the scripts run inside Redis included,
 * and the pools' renewals, wake-ups and announcements meanwhile — divided by the cycles; the
 * EVALSHA calls alone are the round trips, and their `usec` the time Redis spent in the scripts.
 * Another client of a shared Redis adds to the deltas, so the least of the runs is reported.
 * Every key of the prefix is removed afterwards.
 */
import { randomUUID } from 'node:crypto';
import type { QueryPool, QueuedMessage, Turn } from '@switchboard/core';
import { FAIL_FAST_OPTIONS, type RedisQueryPool, createRedisQueryPool } from '@switchboard/store-redis';
import { Redis } from 'ioredis';
import { callsPerCycle, commandStats } from './support/redis-commandstats.js';
import { removePoolKeys } from './support/redis-prefix-keys.js';
import { type Measurement, progress, runScenario } from './support/report.js';
import { SETTINGS } from './support/settings.js';
import { SampleSet, timeMs } from './support/stats.js';
import { benchPoolSettings, createBenchPool, queuedMessageOf } from './support/switchboard-scheduler.js';
import { benchMessage } from './support/workloads.js';

const REPLICA_COUNTS = [1, 2, 3] as const;
/** The memory pool times this many more cycles per run: at a few µs each, fewer would last a few ms. */
const MEMORY_CYCLES_FACTOR = 10;
/** Slots no cycle waits for: only the pool's own cost is measured. */
const SLOTS = { globalLimit: 1000, sessionLimit: 1 };
/** Cycles of the Redis pool's warm-up run (JIT, script loading); the memory pool warms up on a whole run. */
const REDIS_WARM_UP_CYCLES = 500;

/** `count` messages, each in a session of its own, built before any timing starts. */
function messagesOf(count: number): QueuedMessage[] {
  return Array.from({ length: count }, (_, index) => queuedMessageOf(benchMessage(index, `c${index}`)));
}

/**
 * Runs one enqueue → claim → complete cycle per message, SETTINGS.poolConcurrency in flight per
 * pool, claiming as the controller does: the turns a pool claims ahead with an enqueue
 * (`onClaimedAhead`) and with a completion (`claimNext`) are taken first, and `claim` is called
 * only when none was handed over.
 */
async function runCycles(pools: readonly QueryPool[], messages: readonly QueuedMessage[]): Promise<void> {
  let next = 0;
  let completed = 0;
  const handed = new Map(pools.map((pool) => [pool, [] as Turn[]]));
  const unsubscribe = pools.map((pool) => pool.onClaimedAhead((turn) => handed.get(pool)?.push(turn)));
  const complete = async (pool: QueryPool, turn: Turn) => {
    const claimNext = (nextTurn: Turn) => handed.get(pool)?.push(nextTurn);
    if ((await pool.complete(turn, [], { claimNext })) === 'settled') completed += 1;
  };
  const take = async (pool: QueryPool) => handed.get(pool)?.shift() ?? (await pool.claim());
  const settleAll = async (pool: QueryPool) => {
    for (let turn = await take(pool); turn !== null; turn = await take(pool)) await complete(pool, turn);
  };
  const worker = async (pool: QueryPool) => {
    while (next < messages.length) {
      const message = messages[next++] as QueuedMessage;
      const result = await pool.enqueue(message);
      if (!result.accepted) throw new Error(`pool refused ${message.message.id}: ${result.reason}`);
      const turn = await take(pool);
      if (turn !== null) await complete(pool, turn);
    }
  };
  await Promise.all(
    pools.flatMap((pool) => Array.from({ length: SETTINGS.poolConcurrency }, () => worker(pool))),
  );
  for (const stop of unsubscribe) stop();
  // A claim finds nothing when other workers took every waiting message first: that leaves as
  // many messages behind as claims came back empty.
  for (const pool of pools) await settleAll(pool);
  if (completed !== messages.length) throw new Error(`${completed} of ${messages.length} cycles completed`);
}

await runScenario('pool-claims', async () => {
  const admin = new Redis(SETTINGS.redisUrl, { ...FAIL_FAST_OPTIONS, retryStrategy: () => null });
  admin.on('error', () => {});
  try {
    await admin.connect();
  } catch (err) {
    throw new Error(`pool-claims needs a Redis at ${SETTINGS.redisUrl} (BENCH_REDIS_URL)`, { cause: err });
  }
  const prefixes: string[] = [];

  /** Replicas of one Redis pool on a fresh prefix. */
  async function openReplicas(count: number): Promise<RedisQueryPool[]> {
    const prefix = `sb-bench-${randomUUID()}`;
    prefixes.push(prefix);
    const pools: RedisQueryPool[] = [];
    for (let replica = 0; replica < count; replica++) {
      pools.push(await createRedisQueryPool({ url: SETTINGS.redisUrl, prefix, ...benchPoolSettings(SLOTS) }));
    }
    return pools;
  }

  /**
   * One timed Redis run: its duration, the commands Redis ran meanwhile per cycle, and the µs
   * Redis spent in the scripts per cycle (the commands they call included).
   */
  async function redisRun(replicas: number, cycles: number) {
    const pools = await openReplicas(replicas);
    const messages = messagesOf(cycles);
    try {
      const before = await commandStats(admin);
      const elapsedMs = await timeMs(() => runCycles(pools, messages));
      const after = await commandStats(admin);
      return {
        elapsedMs,
        perCycle: callsPerCycle(before.calls, after.calls, cycles),
        scriptUs: (after.evalshaUs - before.evalshaUs) / cycles,
      };
    } finally {
      for (const pool of pools) await pool.shutdown();
      await removePoolKeys(admin, prefixes.at(-1) as string);
    }
  }

  try {
    const memoryCycles = SETTINGS.poolMessages * MEMORY_CYCLES_FACTOR;
    await runCycles([createBenchPool(SLOTS)], messagesOf(memoryCycles));
    await redisRun(1, REDIS_WARM_UP_CYCLES);

    const runsMs = new SampleSet();
    /** µs Redis spent in the scripts per message, by replica count. */
    const scriptUs = new SampleSet();
    /** Per replica count: the commands per cycle of the run that counted fewest in all. */
    const fewestCalls = new Map<number, Record<string, number>>();
    const total = (perCycle: Record<string, number>) => Object.values(perCycle).reduce((a, b) => a + b, 0);
    // Runs alternate between the pools so that drift in the machine hits all of them alike.
    for (let round = 0; round < SETTINGS.poolRuns; round++) {
      const messages = messagesOf(memoryCycles);
      const memoryMs = await timeMs(() => runCycles([createBenchPool(SLOTS)], messages));
      runsMs.add('memory', memoryMs);
      progress(`memory · run ${round + 1}: ${memoryMs.toFixed(0)} ms for ${memoryCycles} cycles`);
      for (const replicas of REPLICA_COUNTS) {
        const run = await redisRun(replicas, SETTINGS.poolMessages);
        const { elapsedMs, perCycle } = run;
        runsMs.add(`redis · ${replicas}`, elapsedMs);
        scriptUs.add(`redis · ${replicas}`, run.scriptUs);
        const fewest = fewestCalls.get(replicas);
        if (fewest === undefined || total(perCycle) < total(fewest)) fewestCalls.set(replicas, perCycle);
        progress(
          `redis · ${replicas} replica(s) · run ${round + 1}: ${elapsedMs.toFixed(0)} ms, ${total(perCycle).toFixed(1)} calls/msg, ${run.scriptUs.toFixed(0)} µs in scripts/msg`,
        );
      }
    }

    const inFlight = `× ${SETTINGS.poolConcurrency} in flight`;
    const memoryRate = memoryCycles / (runsMs.fastest('memory') / 1000);
    const measurements: Measurement[] = [
      { metric: `memory · 1 pool ${inFlight}`, value: memoryRate, unit: 'claims/s' },
    ];
    for (const replicas of REPLICA_COUNTS) {
      const rate = SETTINGS.poolMessages / (runsMs.fastest(`redis · ${replicas}`) / 1000);
      const perCycle = fewestCalls.get(replicas) as Record<string, number>;
      const pools = `${replicas} pool${replicas === 1 ? '' : 's'}`;
      measurements.push(
        { metric: `redis · ${pools} ${inFlight} each`, value: rate, unit: 'claims/s' },
        { metric: `redis ÷ memory · ${pools}`, value: rate / memoryRate, unit: '×' },
        { metric: `redis calls per message · ${pools}`, value: total(perCycle), unit: 'calls' },
        { metric: `redis evalsha per message · ${pools}`, value: perCycle.evalsha ?? 0, unit: 'calls' },
        {
          metric: `redis script time per message · ${pools}`,
          value: scriptUs.fastest(`redis · ${replicas}`),
          unit: 'µs',
        },
      );
    }
    return {
      measurements,
      targets: [],
      details: {
        runsMs,
        scriptUs,
        memoryCycles,
        redisCycles: SETTINGS.poolMessages,
        callsPerMessage: Object.fromEntries(fewestCalls),
      },
    };
  } finally {
    for (const prefix of prefixes) await removePoolKeys(admin, prefix).catch(() => {});
    admin.disconnect();
  }
});
