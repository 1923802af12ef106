import { randomUUID } from 'node:crypto';
import type { QueryPool } from '@switchboard/core';
import { queryPoolContract } from '@switchboard/contracts';
import { describe } from 'vitest';
import { createRedisQueryPool, type RedisQueryPool } from '../src/index.js';
import { REDIS_URL, redisReachable, removePoolKeys } from './redis-harness.js';

const reachable = await redisReachable();

describe.skipIf(!reachable)('redis', () => {
  queryPoolContract('redis', async ({ now, concurrency, limits, pipelines, tenants }) => {
    const prefix = `sb-contract-${randomUUID()}`;
    const replicas: RedisQueryPool[] = [];
    const open = async (): Promise<QueryPool> => {
      const pool = await createRedisQueryPool({
        url: REDIS_URL,
        prefix,
        now,
        concurrency,
        limits,
        pipelines,
        tenants,
      });
      replicas.push(pool);
      return pool;
    };
    return {
      store: await open(),
      peer: open,
      async close() {
        for (const pool of replicas) await pool.shutdown();
        await removePoolKeys(REDIS_URL, prefix);
      },
    };
  });
});
