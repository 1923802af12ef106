import { eventually } from '@switchboard/testkit/eventually';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { REDIS_URL, manualClock, queued, redisReachable, usePools } from './redis-harness.js';

const reachable = await redisReachable();

describe.skipIf(!reachable)('pool/enqueue.lua', () => {
  const pools = usePools();
  const delivery = (key: string, ttlMs = 60_000) => ({ key, ttlMs });

  describe('when replicas enqueue one delivery key at once', () => {
    it('accepts exactly one and queues one message', async () => {
      const clock = manualClock();
      const replicas = [await pools.open({ now: clock.now }), await pools.open({ now: clock.now })];
      const results = await Promise.all(
        Array.from({ length: 8 }, (_, index) =>
          (replicas[index % 2] as (typeof replicas)[0]).enqueue(
            queued(`S${index}`, clock.now()),
            delivery('tg:42'),
          ),
        ),
      );
      expect(results.filter((result) => result.accepted)).toHaveLength(1);
      expect(results.filter((result) => !result.accepted && result.reason === 'duplicate')).toHaveLength(7);
      expect(await replicas[0]?.stats()).toMatchObject({ pending: 1, sessions: 1 });
    });
  });

  describe('when a delivery key was seen', () => {
    it("answers duplicate until its TTL has passed on the caller's clock", async () => {
      const clock = manualClock();
      const pool = await pools.open({ now: clock.now });
      expect(await pool.enqueue(queued('A', clock.now()), delivery('sl:1', 1000))).toMatchObject({
        accepted: true,
      });
      clock.advance(999);
      expect(await pool.enqueue(queued('A', clock.now()), delivery('sl:1', 1000))).toEqual({
        accepted: false,
        reason: 'duplicate',
      });
      clock.advance(1);
      expect(await pool.enqueue(queued('A', clock.now()), delivery('sl:1', 1000))).toMatchObject({
        accepted: true,
      });
    });
  });

  describe('when keyed traffic stops', () => {
    it('loses its expired delivery keys at the next renewal, without another keyed enqueue', async () => {
      const clock = manualClock();
      const pool = await pools.open({ now: clock.now, renewEveryMs: 20 });
      const redis = new Redis(REDIS_URL);
      try {
        const dedup = () => redis.zcard(`{${pools.prefix}}:dedup`);
        for (const key of ['tg:1', 'tg:2', 'tg:3'])
          await pool.enqueue(queued('A', clock.now()), delivery(key, 1000));
        expect(await dedup()).toBe(3);
        clock.advance(1000);
        await eventually(async () => (await dedup()) === 0, 5000, 'the expired delivery keys purged');
      } finally {
        redis.disconnect();
      }
    });
  });

  describe('when the pool holds max_pending messages', () => {
    it('refuses without marking the key, and keeps a last delivery past the bound', async () => {
      const clock = manualClock();
      const pool = await pools.open({ now: clock.now, limits: { maxPending: 1, maxPendingPerSession: 500 } });
      await pool.enqueue(queued('A', clock.now()));
      expect(await pool.enqueue(queued('B', clock.now()), delivery('dc:1'))).toMatchObject({
        accepted: false,
        reason: 'queue_full',
      });
      expect(await pool.enqueue(queued('B', clock.now()), delivery('dc:1'), { last: true })).toMatchObject({
        accepted: true,
      });
      expect((await pool.stats()).pending).toBe(2);
    });

    it('keeps a last delivery after close, since the pool is durable', async () => {
      const clock = manualClock();
      const pool = await pools.open({ now: clock.now });
      pool.close();
      expect(await pool.enqueue(queued('A', clock.now()))).toMatchObject({
        accepted: false,
        reason: 'draining',
      });
      expect(await pool.enqueue(queued('A', clock.now()), undefined, { last: true })).toMatchObject({
        accepted: true,
      });
    });
  });

  describe('when a session is full', () => {
    it('drops its oldest waiting messages and returns them whole', async () => {
      const clock = manualClock();
      const pool = await pools.open({ now: clock.now, limits: { maxPending: 100, maxPendingPerSession: 2 } });
      const oldest = queued('A', clock.now(), { attempt: 3, retryAtMs: clock.now() - 5 });
      await pool.enqueue(oldest);
      await pool.enqueue(queued('A', clock.now()));
      const result = await pool.enqueue(queued('A', clock.now()));
      expect(result).toEqual({ accepted: true, overflowed: [oldest] });
      expect((await pool.stats()).pending).toBe(2);
    });
  });

  describe("when a message's acceptedAt comes from another clock than the pool's", () => {
    it("debounces on the pool's clock and hands the message out with the pool's acceptance time", async () => {
      const clock = manualClock();
      const pool = await pools.open({
        now: clock.now,
        pipelines: [{ id: 'p', aggregation: { enabled: true, delay: '200ms', max_wait: '1s' } }],
      });
      const acceptedAt = clock.now();
      // The accepting host's clock runs 10 s behind the pool's: its own time would put the
      // burst's max_wait long past, and the message would run at once.
      await pool.enqueue(queued('A', acceptedAt - 10_000));
      expect(await pool.claim()).toBeNull();
      clock.advance(200);
      const turn = await pool.claim();
      expect(turn?.session).toBe('A');
      expect(turn?.messages.map((message) => message.acceptedAt)).toEqual([acceptedAt]);
    });
  });
});
