import { randomUUID } from 'node:crypto';
import { PipelinePolicySchema, isSwitchboardError } from '@switchboard/core';
import { deliveryFixture } from '@switchboard/contracts';
import { afterEach, describe, expect, it } from 'vitest';
import {
  createPartitionedQueryPool,
  createPartitionedReplyOutbox,
  createRedisQueryPool,
  type RedisQueryPool,
} from '../src/index.js';
import {
  REDIS_URL,
  keyInPartition,
  manualClock,
  queued,
  redisReachable,
  removePartitionedKeys,
} from './redis-harness.js';

const reachable = await redisReachable();
const PARTITIONS = 3;

const chatOf = (index: number) => keyInPartition(index, PARTITIONS, 'chat');

describe.skipIf(!reachable)('the partition count recorded by the deployment', () => {
  let prefix = `sb-partition-count-${randomUUID()}`;
  const opened: Array<{ shutdown(): Promise<void> }> = [];
  afterEach(async () => {
    for (const item of opened.splice(0)) await item.shutdown().catch(() => {});
    await removePartitionedKeys(prefix, PARTITIONS);
    prefix = `sb-partition-count-${randomUUID()}`;
  });
  const base = (clock: ReturnType<typeof manualClock>) => ({
    url: REDIS_URL,
    prefix,
    now: clock.now,
    concurrency: { global: 3, perSession: 1 },
    limits: { maxPending: 10_000, maxPendingPerSession: 500 },
    pipelines: [PipelinePolicySchema.parse({ id: 'p' })],
  });
  const attempt = (start: Promise<RedisQueryPool>) =>
    start.then(
      async (pool) => {
        await pool.shutdown();
        return null;
      },
      (err: unknown) => err,
    );

  it('is not rewritten by a replica refused for counting otherwise', async () => {
    const clock = manualClock();
    const running = await createPartitionedQueryPool({ ...base(clock), partitions: PARTITIONS });
    opened.push(running);
    // A replica with 1 partition starts while the 3-partition one runs idle: refused by the fingerprint...
    const refusal = await attempt(createRedisQueryPool(base(clock)));
    expect(isSwitchboardError(refusal, 'SB_STORE_CONFIG_MISMATCH')).toBe(true);
    await running.enqueue(queued(chatOf(2), clock.now()));
    await running.shutdown();
    opened.splice(0);
    // The message waits in partition 2 under the count 3: a pool of 1 partition must be refused.
    const later = await attempt(createRedisQueryPool(base(clock)));
    expect(isSwitchboardError(later, 'SB_CONFIG_INVALID')).toBe(true);
  });

  it('refuses a change while replies wait in the partitioned outbox, naming them', async () => {
    const clock = manualClock();
    const outbox = await createPartitionedReplyOutbox({
      url: REDIS_URL,
      prefix,
      leaseMs: 60_000,
      partitions: PARTITIONS,
    });
    const pool = await createPartitionedQueryPool({ ...base(clock), partitions: PARTITIONS });
    opened.push(pool);
    await outbox.add(deliveryFixture(1, { chat: chatOf(2), channel: 'tg' }));
    await outbox.close();
    await pool.shutdown();
    opened.splice(0);
    // The pool is empty, but the reply waits in partition 2, which one partition never reads.
    const change = await attempt(createRedisQueryPool(base(clock)));
    expect(isSwitchboardError(change, 'SB_CONFIG_INVALID')).toBe(true);
    expect(String((change as Error).message)).toMatch(/1 replies waiting to be sent \(partition 2\)/);
  });
});
