import type { KeptOutcome, Outcome, Turn } from '@switchboard/core';
import { deliveryFixture } from '@switchboard/contracts';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import {
  KEPT_OUTCOME_LEASE_MS,
  type RedisKeptOutcomes,
  createPartitionedKeptOutcomes,
  createPartitionedReplyOutbox,
  keptOutcomeKeysOf,
} from '../src/index.js';
import { partitionOf, partitionPrefixOf } from '../src/partitions.js';
import {
  REDIS_URL,
  deadLetters,
  manualClock,
  queued,
  redisReachable,
  removePoolKeys,
  usePools,
} from './redis-harness.js';

const reachable = await redisReachable();

const PARTITIONS = 2;

/** Keeps every outcome whole. */
const keepAll: KeptOutcome = (outcome) => JSON.stringify(outcome);

/** `count` sessions of partition `index`. */
function sessionsOf(index: number, count: number): string[] {
  const sessions: string[] = [];
  for (let n = 0; sessions.length < count; n++) {
    if (partitionOf(`session-${n}`, PARTITIONS) === index) sessions.push(`session-${n}`);
  }
  return sessions;
}

const byMessage = (outcomes: Outcome[]) =>
  [...outcomes].sort((a, b) => a.message.id.localeCompare(b.message.id));

describe.skipIf(!reachable)('createPartitionedKeptOutcomes', () => {
  const pools = usePools();

  /**
   * Dead-letters a turn of each of `perPartition` sessions of every partition, on the pool of the
   * session's partition (`partitionPrefixOf`), which keeps the outcomes there; answers them per partition.
   */
  async function settleInEveryPartition(now: () => number, perPartition: number): Promise<Outcome[][]> {
    const kept: Outcome[][] = [];
    for (let index = 0; index < PARTITIONS; index++) {
      const pool = await pools.open({
        prefix: partitionPrefixOf(pools.prefix, index),
        now,
        keptOutcome: keepAll,
      });
      const ended: Outcome[] = [];
      for (const session of sessionsOf(index, perPartition)) {
        await pool.enqueue(queued(session, now()));
        const turn = (await pool.claim()) as Turn;
        const outcomes = deadLetters(turn, now());
        expect(await pool.complete(turn, outcomes)).toBe('settled');
        ended.push(...outcomes);
      }
      kept.push(ended);
    }
    return kept;
  }

  const open = (now: () => number): Promise<RedisKeptOutcomes> =>
    createPartitionedKeptOutcomes({
      url: REDIS_URL,
      prefix: pools.prefix,
      partitions: PARTITIONS,
      now,
      forgetEveryMs: 1,
    });

  describe('when the partitioned outbox ended deliveries of several partitions', () => {
    it('recovers what their removals kept, and forgets it where they kept it', async () => {
      // The outbox dates what it keeps by Redis' clock.
      const clock = manualClock(Date.now());
      const outbox = await createPartitionedReplyOutbox({
        url: REDIS_URL,
        prefix: pools.prefix,
        partitions: PARTITIONS,
        leaseMs: 60_000,
        keptOutcome: keepAll,
      });
      const ended: Outcome[] = [];
      try {
        for (let index = 0; index < PARTITIONS; index++) {
          for (const [at, chat] of sessionsOf(index, 3).entries())
            await outbox.add(deliveryFixture(index * 3 + at, { chat }));
        }
        for (let claim = await outbox.claim('tg', clock.now()); claim !== null; ) {
          // The sender's outcome of a delivery: its message's, whose session is the chat.
          const { delivery } = claim;
          const outcome: Outcome = {
            kind: 'completed',
            at: clock.now(),
            message: delivery.origin,
            session: delivery.chat,
            deliveryId: delivery.id,
          };
          ended.push(outcome);
          ({ next: claim } = await outbox.endAndClaim(claim, clock.now(), [outcome]));
        }
      } finally {
        await outbox.close();
      }
      clock.advance(KEPT_OUTCOME_LEASE_MS + 1000);
      const outcomes = await open(clock.now);
      try {
        expect(byMessage(await outcomes.claimDue())).toEqual(byMessage(ended));
        for (const outcome of ended) outcomes.forget(outcome);
      } finally {
        await outcomes.close();
      }
      clock.advance(KEPT_OUTCOME_LEASE_MS);
      const later = await open(clock.now);
      try {
        expect(await later.claimDue()).toEqual([]);
      } finally {
        await later.close();
        for (let index = 0; index < PARTITIONS; index++)
          await removePoolKeys(REDIS_URL, partitionPrefixOf(pools.prefix, index));
      }
    });
  });

  describe('when settlements of several partitions kept outcomes', () => {
    it('recovers those of every partition once their time came', async () => {
      const clock = manualClock();
      const kept = await settleInEveryPartition(clock.now, 1);
      const outcomes = await open(clock.now);
      try {
        expect(await outcomes.claimDue()).toEqual([]);
        clock.advance(KEPT_OUTCOME_LEASE_MS);
        expect(byMessage(await outcomes.claimDue())).toEqual(byMessage(kept.flat()));
      } finally {
        await outcomes.close();
      }
    });

    it('takes from the partitions in turn when a limit leaves some behind', async () => {
      const clock = manualClock();
      await settleInEveryPartition(clock.now, 2);
      clock.advance(KEPT_OUTCOME_LEASE_MS);
      const outcomes = await open(clock.now);
      try {
        const taken = [...(await outcomes.claimDue(1)), ...(await outcomes.claimDue(1))];
        expect(taken.map((outcome) => partitionOf(outcome.session, PARTITIONS))).toEqual([0, 1]);
      } finally {
        await outcomes.close();
      }
    });

    it('forgets an outcome in the partition of its session', async () => {
      const clock = manualClock();
      const kept = await settleInEveryPartition(clock.now, 3);
      const outcomes = await open(clock.now);
      for (const outcome of kept[1] as Outcome[]) outcomes.forget(outcome);
      // Closing writes the forgets gathered.
      await outcomes.close();
      const client = new Redis(REDIS_URL);
      try {
        const held = await Promise.all(
          kept.map((_, index) => client.hlen(keptOutcomeKeysOf(partitionPrefixOf(pools.prefix, index)).hash)),
        );
        expect(held).toEqual([(kept[0] as Outcome[]).length, 0]);
      } finally {
        client.disconnect();
      }
    });
  });
});
