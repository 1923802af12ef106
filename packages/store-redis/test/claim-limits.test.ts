import type { Turn } from '@switchboard/core';
import { describe, expect, it } from 'vitest';
import { manualClock, queued, redisReachable, usePools } from './redis-harness.js';

const reachable = await redisReachable();

describe.skipIf(!reachable)('pool/claim.lua taking slots', () => {
  const pools = usePools();

  /** Ten claims at once, five through each of two replicas (two connections). */
  async function tenConcurrentClaims(setup: Parameters<typeof pools.open>[0]) {
    const clock = manualClock();
    const first = await pools.open({ now: clock.now, ...setup });
    const second = await pools.open({ now: clock.now, ...setup });
    for (let index = 0; index < 10; index++) await first.enqueue(queued(`S${index}`, clock.now()));
    const claims = await Promise.all(
      Array.from({ length: 10 }, (_, index) => (index % 2 === 0 ? first : second).claim()),
    );
    return { claimed: claims.filter((turn) => turn !== null), first, second };
  }

  describe('when ten replicas race for three global slots', () => {
    it('hands out exactly three turns, of three different sessions', async () => {
      const { claimed, first } = await tenConcurrentClaims({ concurrency: { global: 3, perSession: 1 } });
      expect(claimed).toHaveLength(3);
      expect(new Set(claimed.map((turn) => turn.session)).size).toBe(3);
      expect(await first.stats()).toMatchObject({ pending: 7, inflight: 3 });
    });
  });

  describe('when they race for a pipeline limited to two', () => {
    it('hands out exactly two turns of that pipeline', async () => {
      const { claimed, second } = await tenConcurrentClaims({
        pipelines: [{ id: 'p', max_concurrency: 2 }, { id: 'q' }],
      });
      expect(claimed).toHaveLength(2);
      expect(await second.stats()).toMatchObject({ inflight: 2, inflightByPipeline: { p: 2, q: 0 } });
    });
  });

  describe('when a session has a turn running', () => {
    it('holds its next message back, whichever replica claims', async () => {
      const clock = manualClock();
      const first = await pools.open({ now: clock.now });
      const second = await pools.open({ now: clock.now });
      await first.enqueue(queued('A', clock.now()));
      await first.enqueue(queued('A', clock.now()));
      const running = (await first.claim()) as Turn;
      expect(await second.claim()).toBeNull();
      await first.complete(running);
      expect(await second.claim()).not.toBeNull();
    });
  });

  describe('when sessions of several pipelines wait', () => {
    it('hands out the oldest head among the pipelines with a free slot', async () => {
      const clock = manualClock();
      const pool = await pools.open({
        now: clock.now,
        pipelines: [{ id: 'p', max_concurrency: 1 }, { id: 'q' }],
      });
      await pool.enqueue(queued('A', clock.now()));
      await pool.enqueue(queued('B', clock.now(), { pipeline: 'q' }));
      await pool.enqueue(queued('C', clock.now()));
      await pool.enqueue(queued('D', clock.now(), { pipeline: 'q' }));
      const order = [];
      for (let turn = await pool.claim(); turn !== null; turn = await pool.claim()) order.push(turn.session);
      expect(order).toEqual(['A', 'B', 'D']);
    });
  });
});
