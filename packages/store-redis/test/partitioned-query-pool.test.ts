import { randomUUID } from 'node:crypto';
import { type Turn, isSwitchboardError } from '@switchboard/core';
import { queryPoolContract } from '@switchboard/contracts';
import { eventually } from '@switchboard/testkit/eventually';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import {
  createGlobalPermits,
  createRedisQueryPool,
  type GlobalPermits,
  partitionOf,
  partitionPrefixOf,
  type RedisQueryPool,
} from '../src/index.js';
import {
  REDIS_URL,
  contractPools,
  manualClock,
  partitionTestConfig,
  queued,
  redisReachable,
  refusalOf,
  removePoolKeys,
  usePartitionedPools,
} from './redis-harness.js';

const reachable = await redisReachable();
const PARTITIONS = 3;

describe.skipIf(!reachable)('redis, partitioned', () => {
  queryPoolContract('redis, 3 partitions', contractPools('sb-partitioned', PARTITIONS), {
    partitioned: true,
  });
});

describe.skipIf(!reachable)('redis, partitioned: the partitions and the one global limit', () => {
  const pools = usePartitionedPools({ tag: 'sb-partitioned', partitions: PARTITIONS, global: 3 });

  it("keeps each session's messages in its own partition's slot, the sessions spread over all of them", async () => {
    const clock = manualClock();
    const pool = await pools.open({ now: clock.now });
    const sessions = Array.from({ length: 24 }, (_, index) => `chat-${index}`);
    for (const session of sessions) await pool.enqueue(queued(session, clock.now()));
    const client = new Redis(REDIS_URL);
    try {
      const used = new Set<number>();
      for (const session of sessions) {
        const home = partitionOf(session, PARTITIONS);
        used.add(home);
        for (let index = 0; index < PARTITIONS; index += 1) {
          const length = await client.llen(`{${partitionPrefixOf(pools.prefix, index)}}:q:${session}`);
          expect(length, `${session} in partition ${index}`).toBe(index === home ? 1 : 0);
        }
      }
      expect(used.size).toBe(PARTITIONS);
    } finally {
      client.disconnect();
    }
    expect((await pool.stats()).pending).toBe(24);
  });

  it('refuses a replica counting partitions otherwise while one runs, naming store.partitions', async () => {
    await pools.open();
    const refusal = await refusalOf(createRedisQueryPool(pools.single()));
    expect(isSwitchboardError(refusal, 'SB_STORE_CONFIG_MISMATCH')).toBe(true);
    expect(String((refusal as Error).message)).toMatch(
      /store\.partitions: this replica absent, the shared store 3/,
    );
  });

  it('refuses another partition count while messages wait under the one recorded, and takes it once they ran', async () => {
    const clock = manualClock();
    const first = await pools.open({ now: clock.now });
    await first.enqueue(queued('chat-1', clock.now()));
    await pools.shutdown(first);
    const single = pools.single({ now: clock.now });
    const refusal = await refusalOf(createRedisQueryPool(single));
    expect(isSwitchboardError(refusal, 'SB_CONFIG_INVALID')).toBe(true);
    expect(String((refusal as Error).message)).toMatch(
      /store\.partitions is 1, but 3 partitions still hold 1 messages queued or running/,
    );
    // Drained with the count it was accepted under, the pool takes the new count.
    const again = await pools.open({ now: clock.now });
    const turn = (await again.claim()) as Turn;
    expect(await again.complete(turn)).toBe('settled');
    await pools.shutdown(again);
    const pool = pools.keep(await createRedisQueryPool(single));
    expect((await pool.stats()).pending).toBe(0);
  });

  it('never runs more turns than the global limit over every partition and replica, and runs each message once', async () => {
    const clock = manualClock();
    const replicas = [await pools.open({ now: clock.now }), await pools.open({ now: clock.now })];
    const messages = Array.from({ length: 24 }, (_, index) => queued(`chat-${index}`, clock.now()));
    for (const message of messages) await (replicas[0] as RedisQueryPool).enqueue(message);
    const running: Array<{ turn: Turn; by: RedisQueryPool }> = [];
    const ran: string[] = [];
    let most = 0;
    for (let round = 0; ran.length < messages.length && round < 200; round += 1) {
      // Every replica claims all it can, at once; then the oldest turn ends.
      const claims = await Promise.all(
        replicas.flatMap((by) => [by, by].map(async () => ({ turn: await by.claim(), by }))),
      );
      for (const { turn, by } of claims) if (turn !== null) running.push({ turn, by });
      most = Math.max(most, running.length);
      const ending = running.shift();
      if (ending === undefined) continue;
      expect(await ending.by.complete(ending.turn)).toBe('settled');
      ran.push(...ending.turn.messages.map((message) => message.message.id));
    }
    expect(most).toBe(3);
    expect(ran.sort()).toEqual(messages.map((message) => message.message.id).sort());
  });

  it('gives the slot of an ended turn back to every replica', async () => {
    const clock = manualClock();
    const [first, second] = [
      await pools.open({ now: clock.now }),
      await pools.open({ now: clock.now }),
    ] as const;
    await first.reconfigure(partitionTestConfig(1));
    await second.reconfigure(partitionTestConfig(1));
    for (let index = 0; index < 4; index += 1) await first.enqueue(queued(`chat-${index}`, clock.now()));
    const turn = (await first.claim()) as Turn;
    expect(turn).not.toBeNull();
    expect(await second.claim()).toBeNull();
    await first.complete(turn);
    expect(await second.claim()).not.toBeNull();
  });
});

describe.skipIf(!reachable)('global permits', () => {
  const prefix = `sb-permits-${randomUUID()}`;
  const opened: GlobalPermits[] = [];
  afterEach(async () => {
    for (const permits of opened.splice(0)) await permits.close();
    await removePoolKeys(REDIS_URL, prefix);
  });

  async function holder(options: { holdMs?: number; renewEveryMs?: number; onLapsed?: () => void } = {}) {
    const permits = await createGlobalPermits({
      url: REDIS_URL,
      prefix,
      replicaId: randomUUID(),
      limit: 2,
      running: () => 0,
      holdMs: options.holdMs ?? 15_000,
      renewEveryMs: options.renewEveryMs ?? 5_000,
      fenceAfterMs: 10_000,
      onLapsed: options.onLapsed ?? (() => {}),
    });
    opened.push(permits);
    return permits;
  }

  it('grants no more than the limit over all replicas, and tells one left short when permits come back', async () => {
    const first = await holder();
    const second = await holder();
    for (const permits of [first, first]) {
      expect(await permits.acquire()).toBe(true);
      expect(permits.take()).toBe(true);
    }
    expect(await second.acquire()).toBe(false);
    let told = 0;
    second.onFreed(() => {
      told += 1;
    });
    first.put();
    await first.release();
    await eventually(async () => told > 0, 5_000, 'the short replica is told');
    expect(await second.acquire()).toBe(true);
    expect(first.held).toBe(1);
  });

  it("gives a replica's permits to the others once its hold lapses, and tells it to give up its turns", async () => {
    let lapsed = 0;
    const gone = await holder({ holdMs: 300, renewEveryMs: 60_000, onLapsed: () => (lapsed += 1) });
    const other = await holder();
    for (let taken = 0; taken < 2; taken += 1) {
      expect(await gone.acquire()).toBe(true);
      expect(gone.take()).toBe(true);
    }
    expect(await other.acquire()).toBe(false);
    await eventually(() => other.acquire(), 5_000, 'the lapsed permits are granted to the other replica');
    // Its next call finds its permits gone while it still uses them.
    expect(await gone.acquire()).toBe(false);
    expect(lapsed).toBeGreaterThan(0);
  });
});
