import { randomUUID } from 'node:crypto';
import {
  SCHEDULING_POLICIES,
  expectSchedulingInvariants,
  schedulingCommand,
  simulateScheduling,
} from '@switchboard/contracts';
import fc from 'fast-check';
import { Redis } from 'ioredis';
import { afterEach, beforeEach, describe, it, vi } from 'vitest';
import { FAIL_FAST_OPTIONS, type RedisQueryPool, createRedisQueryPool } from '../src/index.js';
import { REDIS_URL, redisReachable, removePoolKeys } from './redis-harness.js';

const reachable = await redisReachable();

/**
 * `replicas` Redis pools on one fresh prefix, on vitest's fake clock: the pools' wake timers and
 * renewals are faked, their Redis calls are real. ioredis' command timeout is left out, since
 * moving the fake clock would fire it for a reply still on its way.
 */
async function redisWorld(globalLimit: number, replicas: number) {
  const prefix = `sb-property-${randomUUID()}`;
  const pools: RedisQueryPool[] = [];
  for (let index = 0; index < replicas; index++) {
    pools.push(
      await createRedisQueryPool({
        createClient: () => new Redis(REDIS_URL, { ...FAIL_FAST_OPTIONS, commandTimeout: undefined }),
        prefix,
        now: () => Date.now(),
        concurrency: { global: globalLimit, perSession: 1 },
        limits: { maxPending: 10_000, maxPendingPerSession: 500 },
        pipelines: SCHEDULING_POLICIES,
      }),
    );
  }
  return {
    world: {
      pools,
      now: () => Date.now(),
      advance: (ms: number) => vi.advanceTimersByTimeAsync(ms).then(() => undefined),
    },
    async close() {
      for (const pool of pools) await pool.shutdown();
      await removePoolKeys(REDIS_URL, prefix);
    },
  };
}

describe.skipIf(!reachable)('scheduling over redis (property)', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  for (const replicas of [1, 3]) {
    it(`keeps the limits, per-session order and exactly one outcome per message with ${replicas} replica(s)`, async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.integer({ min: 1, max: 3 }),
          fc.array(schedulingCommand, { maxLength: 60 }),
          async (limit, commands) => {
            const { world, close } = await redisWorld(limit, replicas);
            try {
              expectSchedulingInvariants(await simulateScheduling(world, limit, commands));
            } finally {
              await close();
            }
          },
        ),
        { numRuns: 50 },
      );
    }, 120_000);
  }
});
