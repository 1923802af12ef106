import type { AddAndClaimResult, ClaimedTurn } from '@switchboard/core';
import { deliveryFixture } from '@switchboard/contracts';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import type { RedisQueryPool, RedisReplyOutbox } from '../src/index.js';
import { manualClock, queued, redisReachable, usePrivateRedis, useReplyOutboxes } from './redis-harness.js';

const reachable = await redisReachable();

/**
 * `calls` of every command Redis ran during `step`, by command name (`INFO commandstats`), the
 * reading's own INFO and CONFIG left out; a script call counts under `script`, whether ioredis
 * sent it as EVALSHA or (the first time on a connection) as EVAL.
 */
async function commandsSince(admin: Redis, step: () => Promise<unknown>): Promise<Record<string, number>> {
  await admin.config('RESETSTAT');
  await step();
  const counted: Record<string, number> = {};
  for (const [, command, calls] of (await admin.info('commandstats')).matchAll(
    /^cmdstat_([^:]+):calls=(\d+)/gm,
  )) {
    if (command === 'info' || (command as string).startsWith('config')) continue;
    const name = command === 'eval' || command === 'evalsha' ? 'script' : (command as string);
    counted[name] = (counted[name] ?? 0) + Number(calls);
  }
  return counted;
}

/**
 * What every enqueue that accepts a message runs: the call, its reads of the pipelines, the
 * configuration and the counts, the message's seq, its session's field and its id key.
 */
const ACCEPTING = { script: 1, smembers: 1, hmget: 1, hgetall: 1, incr: 1, hsetnx: 1, set: 1 };

/**
 * What a complete of a one-message turn runs, claiming its next turn (none is waiting): the
 * message's id and channel come from the lease, so no read of the message before its deletion; its
 * session's queue is empty, so where it is placed is not read.
 */
const COMPLETING = {
  script: 1,
  smembers: 1,
  hmget: 2,
  del: 2,
  zrem: 1,
  hgetall: 1,
  hset: 1,
  hincrby: 1,
  zadd: 1,
  set: 1,
  lindex: 1,
  hdel: 1,
  zrange: 1,
};

/**
 * What an add that leases the delivery it stores runs (reply-outbox/includes/add-delivery), in
 * whichever script includes it: no token key (a repeat of its claim finds the delivery by its id).
 */
const ADDING = {
  exists: 1,
  llen: 1,
  incr: 1,
  rpush: 1,
  zcard: 1,
  zrangebyscore: 1,
  hset: 1,
  zadd: 2,
  hincrby: 1,
};

/** The counts of every command of `steps` together. */
function together(...steps: Array<Record<string, number>>): Record<string, number> {
  const sum: Record<string, number> = {};
  for (const step of steps)
    for (const [command, calls] of Object.entries(step)) sum[command] = (sum[command] ?? 0) + calls;
  return sum;
}

// The counts are deterministic: one replica, one pipeline, one message in a session of its own,
// nothing else on the private Redis. Renewals and wake-ups are kept out of the measured steps by
// a renewal period far longer than the test.
/** One settlement in 16 (a token starting with 0) also purges expired tombstones: one range read. */
const purgedBy = (turn: ClaimedTurn): Record<string, number> =>
  turn.lease.token.startsWith('0') ? { zrangebyscore: 1 } : {};

describe.skipIf(!reachable)('the Redis commands of one message through the pool', () => {
  const redis = usePrivateRedis();
  const outboxes = useReplyOutboxes(redis.url);

  async function openPool(
    maxConcurrency?: number,
    outbox?: RedisReplyOutbox,
  ): Promise<{
    pool: RedisQueryPool;
    handed: ClaimedTurn[];
    clock: ReturnType<typeof manualClock>;
  }> {
    const clock = manualClock();
    const pool = await redis.pools.open({
      now: clock.now,
      pipelines: [{ id: 'p', max_concurrency: maxConcurrency }],
      leaseMs: 120_000,
      renewEveryMs: 60_000,
      fenceAfterMs: 90_000,
      outbox,
    });
    const handed: ClaimedTurn[] = [];
    pool.onClaimedAhead((turn) => handed.push(turn));
    return { pool, handed, clock };
  }

  describe('when the message enters a session with nothing queued or running and a slot is free', () => {
    it('is claimed by its enqueue without passing through the session queue or the ready set', async () => {
      const { pool, handed, clock } = await openPool();
      const commands = await commandsSince(redis.admin, () => pool.enqueue(queued('A', clock.now())));
      expect(handed).toHaveLength(1);
      expect(handed[0]?.messages[0]?.attempt).toBe(1);
      // No push and pop of the session queue, no ready or waiting set, no lease lookup by token.
      expect(commands).toEqual({ ...ACCEPTING, zrange: 1, zadd: 2, hset: 3 });
      expect(await pool.stats()).toMatchObject({ pending: 0, inflight: 1 });
      // Its session runs one turn, as if the message had been pushed and popped.
      expect(await redis.admin.hget(`{${redis.pools.prefix}}:sessions`, 'A')).toBe('1');
    });

    it('is completed from what its lease holds, claiming the next turn under a new token unlooked-up', async () => {
      const { pool, handed, clock } = await openPool();
      await pool.enqueue(queued('A', clock.now()));
      const turn = handed[0] as ClaimedTurn;
      const next: ClaimedTurn[] = [];
      const commands = await commandsSince(redis.admin, () =>
        pool.complete(turn, [], { claimNext: (claimed) => next.push(claimed) }),
      );
      expect(next).toEqual([]);
      expect(commands).toEqual(together(COMPLETING, purgedBy(turn)));
      expect(await pool.stats()).toMatchObject({ pending: 0, inflight: 0 });
      // Its id key says `settled` (with the channel and pipeline the lease kept) for locate.
      const id = turn.messages[0]?.message.id as string;
      expect(await redis.admin.get(`{${redis.pools.prefix}}:id:${id}`)).toBe(
        `settled:${turn.messages[0]?.message.channel}:p`,
      );
    });
  });

  describe('when the turn completes with its answer, which its reply sender can send at once', () => {
    it('stores and leases the delivery in the same script call as the completion', async () => {
      const outbox = await outboxes.open({ prefix: redis.pools.prefix });
      const { pool, handed, clock } = await openPool(undefined, outbox);
      await pool.enqueue(queued('A', clock.now()));
      const turn = handed[0] as ClaimedTurn;
      const delivery = deliveryFixture(1, { chat: turn.session });
      const next: ClaimedTurn[] = [];
      let added: AddAndClaimResult | undefined;
      const commands = await commandsSince(redis.admin, () =>
        pool.complete(turn, [], {
          claimNext: (claimed) => next.push(claimed),
          replies: { delivery, claimAt: clock.now(), stored: (result) => (added = result) },
        }),
      );
      expect(next).toEqual([]);
      expect(added?.claim?.delivery).toBe(delivery);
      // One script call for both.
      expect(commands).toEqual(together(COMPLETING, purgedBy(turn), ADDING));
    });
  });

  describe("when the message enters an idle session while its pipeline's slots are taken", () => {
    it('waits at once, offered to no claim and counting no turn for its session', async () => {
      // The replica holds fewer turns than its share of the global slots: it claims in the step.
      const { pool, handed, clock } = await openPool(1);
      await pool.enqueue(queued('A', clock.now()));
      const commands = await commandsSince(redis.admin, () => pool.enqueue(queued('B', clock.now())));
      expect(handed).toHaveLength(1);
      // Pushed, placed and counted as waiting; its `sessions` field written once, at 0.
      expect(commands).toEqual({ ...ACCEPTING, hset: 3, rpush: 1, zadd: 3, sadd: 1, zrange: 1 });
      expect(await redis.admin.hget(`{${redis.pools.prefix}}:sessions`, 'B')).toBe('0');
    });
  });

  describe('when a claim is made with a new token', () => {
    it('looks no lease up by that token', async () => {
      const { pool, clock } = await openPool();
      // Its enqueue claimed the message: the claim finds nothing to take, and asks nothing of its token.
      await pool.enqueue(queued('A', clock.now()));
      const commands = await commandsSince(redis.admin, () => pool.claim());
      expect(commands.exists).toBeUndefined();
    });
  });
});

describe.skipIf(!reachable)('the Redis commands of one reply through the reply outbox', () => {
  const redis = usePrivateRedis();
  const outboxes = useReplyOutboxes(redis.url);

  describe('when an add leases the delivery it stores', () => {
    it('writes no token key: a repeat of its claim finds the delivery by its id', async () => {
      const clock = manualClock();
      const outbox = await outboxes.open();
      let claimed: Awaited<ReturnType<typeof outbox.addAndClaim>> | undefined;
      const commands = await commandsSince(redis.admin, async () => {
        claimed = await outbox.addAndClaim(deliveryFixture(1), clock.now());
      });
      expect(claimed?.claim?.delivery.id).toBe(deliveryFixture(1).id);
      expect(commands).toEqual(together({ script: 1 }, ADDING));
    });
  });
});
