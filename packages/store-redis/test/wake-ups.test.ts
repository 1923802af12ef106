import type { Turn } from '@switchboard/core';
import { eventually } from '@switchboard/testkit/eventually';
import { describe, expect, it } from 'vitest';
import { manualClock, queued, redisReachable, usePools } from './redis-harness.js';

const reachable = await redisReachable();

/** Counts a pool's wake-ups from now on. */
function countWakeups(pool: { onRunnable(listener: () => void): () => void }): () => number {
  let wakeups = 0;
  pool.onRunnable(() => {
    wakeups += 1;
  });
  return () => wakeups;
}

describe.skipIf(!reachable)('wake-ups (wake-11.lua, the runnable channel)', () => {
  const pools = usePools();

  describe('when one replica makes work claimable', () => {
    it('wakes its own listeners once and the other replicas through the channel', async () => {
      const clock = manualClock();
      const first = await pools.open({ now: clock.now });
      const second = await pools.open({ now: clock.now });
      const firstWakeups = countWakeups(first);
      const secondWakeups = countWakeups(second);
      await first.enqueue(queued('A', clock.now()));
      expect(firstWakeups()).toBe(1);
      await eventually(() => secondWakeups() === 1, 5000, 'the other replica woken');
      // The enqueuing replica's own announcement came back on the channel: it stays ignored.
      await first.stats();
      expect(firstWakeups()).toBe(1);
    });

    it('wakes nobody while nothing may run', async () => {
      const clock = manualClock();
      const first = await pools.open({ now: clock.now, concurrency: { global: 1, perSession: 1 } });
      const second = await pools.open({ now: clock.now, concurrency: { global: 1, perSession: 1 } });
      await first.enqueue(queued('A', clock.now()));
      const running = (await first.claim()) as Turn;
      const secondWakeups = countWakeups(second);
      await first.enqueue(queued('B', clock.now()));
      await first.complete(running);
      await eventually(() => secondWakeups() === 1, 5000, 'the wake-up after the freed slot');
      expect(secondWakeups()).toBe(1);
    });
  });

  describe('when a debounced run comes due', () => {
    it('wakes the listeners at its due time, without a claim', async () => {
      const pool = await pools.open({
        now: Date.now,
        pipelines: [{ id: 'p', aggregation: { enabled: true, delay: '200ms' } }],
      });
      const wakeups = countWakeups(pool);
      const enqueuedAt = Date.now();
      await pool.enqueue(queued('A', enqueuedAt));
      expect(wakeups()).toBe(0);
      await eventually(() => wakeups() === 1, 5000, 'the timer wake-up');
      expect(Date.now() - enqueuedAt).toBeGreaterThanOrEqual(200);
      expect((await pool.claim())?.session).toBe('A');
    });
  });

  describe('when a lease expires', () => {
    it('wakes the replica that learnt the deadline, whose timer reclaims the turn', async () => {
      const holderClock = manualClock(Date.now());
      // The shortest lease the timing rules allow (fencing plus the 2 s command timeout first).
      const leases = { leaseMs: 2400, renewEveryMs: 100, fenceAfterMs: 300 };
      const holder = await pools.open({ now: holderClock.now, ...leases });
      const other = await pools.open({ now: Date.now, ...leases });
      await holder.enqueue(queued('A', Date.now()));
      const turn = (await holder.claim()) as Turn;
      const wakeups = countWakeups(other);
      // Waits behind the running turn: not claimable, but the reply carries the lease deadline.
      await other.enqueue(queued('A', Date.now()));
      expect(wakeups()).toBe(0);
      await eventually(() => wakeups() > 0, 5000, 'the wake-up at the lease deadline');
      expect(await other.stats()).toMatchObject({ pending: 2, inflight: 0 });
      expect((await other.claim())?.id).toBe(turn.id);
    });
  });
});
