import { type Outcome, PipelinePolicySchema, type Turn, createController } from '@switchboard/core';
import { instantDelivery } from '@switchboard/contracts';
import { eventually } from '@switchboard/testkit/eventually';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { FAIL_FAST_OPTIONS } from '../src/index.js';
import {
  REDIS_URL,
  manualClock,
  openScriptRunner,
  queued,
  redisReachable,
  usePrivateRedis,
  usePools,
} from './redis-harness.js';

const reachable = await redisReachable();

describe.skipIf(!reachable)('pool/claim.lua with a token that already holds a lease', () => {
  const pools = usePools();

  describe('when the same token claims twice', () => {
    it('answers the same turn and takes no second slot', async () => {
      const clock = manualClock();
      const pool = await pools.open({ now: clock.now });
      await pool.enqueue(queued('A', clock.now()));
      await pool.enqueue(queued('B', clock.now()));
      const runner = await openScriptRunner(REDIS_URL, pools.prefix, clock.now);
      try {
        const first = (await runner.run('pool/claim', 'token-1', 15_000)) as unknown[];
        const again = (await runner.run('pool/claim', 'token-1', 15_000)) as unknown[];
        expect(first[3]).toEqual(again[3]);
        expect((first[3] as unknown[])[1]).toBe('A');
        expect(await pool.stats()).toMatchObject({ pending: 1, inflight: 1 });
      } finally {
        await runner.close();
      }
    });
  });

  describe('when a settlement claims its next turn under a token that holds a lease already', () => {
    it("answers that lease's turn and claims no second one under it", async () => {
      const clock = manualClock();
      const pool = await pools.open({ now: clock.now });
      for (const session of ['A', 'B', 'C']) await pool.enqueue(queued(session, clock.now()));
      const runner = await openScriptRunner(REDIS_URL, pools.prefix, clock.now);
      try {
        const held = (await runner.run('pool/claim', 'token-1', 15_000)) as unknown[];
        await runner.run('pool/claim', 'token-2', 15_000);
        // As a settlement repeat arriving once its next token was claimed with already.
        const settled = (await runner.run(
          'pool/complete',
          'token-2',
          '0',
          60_000,
          'token-1',
          15_000,
          '',
        )) as unknown[];
        expect(settled[0]).toBe('settled');
        expect(settled[3]).toEqual(held[3]);
        // A's turn still runs under token-1; C still waits; B's slot was freed.
        expect(await pool.stats()).toMatchObject({ pending: 1, inflight: 1 });
      } finally {
        await runner.close();
      }
    });
  });

  describe('when a claim times out after Redis ran it (its reply lost)', () => {
    // CLIENT PAUSE holds every write of the Redis: only on one of the test's own.
    const redis = usePrivateRedis();
    const privatePools = redis.pools;

    it('hands out that turn on the next claim instead of leaving it to expire', async () => {
      const clock = manualClock();
      const pool = await privatePools.open({
        now: clock.now,
        createClient: () => new Redis(redis.url(), { ...FAIL_FAST_OPTIONS, commandTimeout: 200 }),
      });
      await pool.enqueue(queued('A', clock.now()));
      await pool.enqueue(queued('B', clock.now()));
      const admin = new Redis(redis.url());
      try {
        await admin.client('PAUSE', 600, 'WRITE');
        await expect(pool.claim()).rejects.toMatchObject({ code: 'SB_STORE_UNAVAILABLE' });
        // Once the pause ends, Redis runs the claim whose caller gave up.
        await eventually(
          async () => (await admin.hget(`{${privatePools.prefix}}:counts`, 'inflight')) === '1',
        );
        const turn = (await pool.claim()) as Turn;
        expect(turn.session).toBe('A');
        expect(await pool.stats()).toMatchObject({ pending: 1, inflight: 1 });
        expect(((await pool.claim()) as Turn).session).toBe('B');
      } finally {
        admin.disconnect();
      }
    });
  });

  describe('when shutdown() finds claims that never started', () => {
    const paused = usePrivateRedis();
    const { pools: privatePools, inflight } = paused;

    /** Another replica whose controller runs pipeline `p` with `retry.max_attempts: 1`. */
    async function survivor() {
      const policy = PipelinePolicySchema.parse({ id: 'p', retry: { max_attempts: 1 } });
      const pool = await privatePools.open({ pipelines: [{ id: 'p', retry: { max_attempts: 1 } }] });
      const attempts: number[] = [];
      const outcomes: Outcome[] = [];
      const sending = instantDelivery({ record: (outcome) => outcomes.push(outcome) });
      const controller = createController({
        pool,
        pipelines: new Map([
          [
            'p',
            {
              id: 'p',
              run: async (query) => {
                attempts.push(query.attempt);
                return { replies: [{ text: query.text }] };
              },
            },
          ],
        ]),
        policies: new Map([['p', policy]]),
        outcomes: { record: (outcome) => outcomes.push(outcome) },
        outbox: sending.outbox,
      });
      controller.start();
      return { attempts, outcomes, stop: () => controller.stop({ drainTimeoutMs: 0 }) };
    }

    it('hands back a claim answered after shutdown began, which then runs once on another replica', async () => {
      const leaving = await privatePools.open({ pipelines: [{ id: 'p', retry: { max_attempts: 1 } }] });
      const message = queued('A', Date.now());
      await leaving.enqueue(message);
      await paused.admin.client('PAUSE', 500, 'WRITE');
      const claim = leaving.claim();
      const shutdown = privatePools.shutdown(leaving);
      // Redis runs the claim once the pause ends; its answer reaches a pool shutting down.
      expect(await claim).toBeNull();
      await shutdown;
      expect(await inflight()).toBe(0);

      const other = await survivor();
      try {
        await eventually(() => other.outcomes.length > 0, 5000, 'an outcome on the other replica');
        expect(other.attempts).toEqual([1]);
        expect(other.outcomes.map((outcome) => [outcome.kind, outcome.message.id])).toEqual([
          ['completed', message.message.id],
        ]);
      } finally {
        await other.stop();
      }
    });

    it('hands back a claim whose answer never came and that no later claim repeated', async () => {
      const leaving = await privatePools.open({
        pipelines: [{ id: 'p', retry: { max_attempts: 1 } }],
        createClient: () => new Redis(paused.url(), { ...FAIL_FAST_OPTIONS, commandTimeout: 200 }),
      });
      const message = queued('A', Date.now());
      await leaving.enqueue(message);
      await paused.admin.client('PAUSE', 600, 'WRITE');
      await expect(leaving.claim()).rejects.toMatchObject({ code: 'SB_STORE_UNAVAILABLE' });
      await eventually(async () => (await inflight()) === 1, 5000, 'Redis ran the claim');
      await privatePools.shutdown(leaving);
      expect(await inflight()).toBe(0);

      const other = await survivor();
      try {
        await eventually(() => other.outcomes.length > 0, 5000, 'an outcome on the other replica');
        expect(other.attempts).toEqual([1]);
        expect(other.outcomes.map((outcome) => outcome.kind)).toEqual(['completed']);
      } finally {
        await other.stop();
      }
    });
  });
});
