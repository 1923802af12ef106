import { isSwitchboardError } from '@switchboard/core';
import { deliveryFixture } from '@switchboard/contracts';
import { describe, expect, it } from 'vitest';
import { createPartitionedReplyOutbox, createRedisQueryPool } from '../src/index.js';
import {
  REDIS_URL,
  keyInPartition,
  manualClock,
  queued,
  redisReachable,
  refusalOf,
  usePartitionedPools,
} from './redis-harness.js';

const reachable = await redisReachable();
const PARTITIONS = 3;

const chatOf = (index: number) => keyInPartition(index, PARTITIONS, 'chat');

describe.skipIf(!reachable)('the partition count recorded by the deployment', () => {
  const pools = usePartitionedPools({ tag: 'sb-partition-count', partitions: PARTITIONS, global: 3 });

  it('is not rewritten by a replica refused for counting otherwise', async () => {
    const clock = manualClock();
    const running = await pools.open({ now: clock.now });
    // A replica with 1 partition starts while the 3-partition one runs idle: refused by the fingerprint...
    const refusal = await refusalOf(createRedisQueryPool(pools.single({ now: clock.now })));
    expect(isSwitchboardError(refusal, 'SB_STORE_CONFIG_MISMATCH')).toBe(true);
    await running.enqueue(queued(chatOf(2), clock.now()));
    await pools.shutdown(running);
    // The message waits in partition 2 under the count 3: a pool of 1 partition must be refused.
    const later = await refusalOf(createRedisQueryPool(pools.single({ now: clock.now })));
    expect(isSwitchboardError(later, 'SB_CONFIG_INVALID')).toBe(true);
  });

  it('refuses a change while replies wait in the partitioned outbox, naming them', async () => {
    const clock = manualClock();
    const outbox = await createPartitionedReplyOutbox({
      url: REDIS_URL,
      prefix: pools.prefix,
      leaseMs: 60_000,
      partitions: PARTITIONS,
    });
    const pool = await pools.open({ now: clock.now });
    await outbox.add(deliveryFixture(1, { chat: chatOf(2), channel: 'tg' }));
    await outbox.close();
    await pools.shutdown(pool);
    // The pool is empty, but the reply waits in partition 2, which one partition never reads.
    const change = await refusalOf(createRedisQueryPool(pools.single({ now: clock.now })));
    expect(isSwitchboardError(change, 'SB_CONFIG_INVALID')).toBe(true);
    expect(String((change as Error).message)).toMatch(/1 replies waiting to be sent \(partition 2\)/);
  });
});
