import type { Turn } from '@switchboard/core';
import { eventually } from '@switchboard/testkit/eventually';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  manualClock,
  queued,
  recordingLogger,
  redisReachable,
  startPrivateRedis,
  usePools,
} from './redis-harness.js';

const reachable = await redisReachable();

describe.skipIf(!reachable)('renew-11.lua and fencing', () => {
  const pools = usePools();

  describe('when another replica reclaimed a turn', () => {
    it('reports its token lost at the next renewal', async () => {
      // The holder's clock stands still, so its renewals never push the deadline past the
      // moment the other replica's clock reaches.
      const holderClock = manualClock();
      const otherClock = manualClock();
      const holder = await pools.open({ now: holderClock.now, renewEveryMs: 20 });
      const other = await pools.open({ now: otherClock.now });
      const lost: string[] = [];
      holder.onLeaseLost((token) => lost.push(token));
      await holder.enqueue(queued('A', holderClock.now()));
      await holder.enqueue(queued('B', holderClock.now()));
      const reclaimed = (await holder.claim()) as Turn;
      const kept = (await holder.claim()) as Turn;
      otherClock.advance(15_000);
      // Settle the second turn meanwhile, so only the first is reported.
      expect(await holder.complete(kept)).toBe('settled');
      expect((await other.claim())?.id).toBe(reclaimed.id);
      await eventually(() => lost.length > 0, 5000, 'a lost lease');
      expect(lost).toEqual([reclaimed.lease.token]);
    });

    it('moves the deadline of the leases it still holds', async () => {
      const clock = manualClock();
      const holder = await pools.open({ now: clock.now, renewEveryMs: 20, leaseMs: 15_000 });
      await holder.enqueue(queued('A', clock.now()));
      const turn = (await holder.claim()) as Turn;
      expect(turn.lease.expiresAt).toBe(clock.now() + 15_000);
      clock.advance(5000);
      await eventually(() => turn.lease.expiresAt === clock.now() + 15_000, 5000, 'a renewed deadline');
      clock.advance(14_999);
      const other = await pools.open({ now: clock.now });
      expect(await other.claim()).toBeNull();
    });
  });

  describe('when Redis is unreachable for fenceAfterMs', () => {
    let redis: Awaited<ReturnType<typeof startPrivateRedis>>;
    const privatePools = usePools(() => redis.url);
    beforeAll(async () => {
      redis = await startPrivateRedis();
    });
    afterAll(async () => {
      await redis?.remove();
    });

    it('keeps renewing the lease of a turn whose settlement failed, so it can be written again', async () => {
      const clock = manualClock();
      const holder = await privatePools.open({ now: clock.now, renewEveryMs: 20, leaseMs: 15_000 });
      await holder.enqueue(queued('A', clock.now()));
      const turn = (await holder.claim()) as Turn;
      await redis.stop();
      await expect(holder.complete(turn)).rejects.toMatchObject({ code: 'SB_STORE_UNAVAILABLE' });
      await redis.start();
      await eventually(async () => (await holder.health()).ok, 10_000, 'the holder reconnected');

      // Less than fenceAfterMs since the last renewal, so the replica keeps the turn.
      clock.advance(5_000);
      await eventually(
        () => turn.lease.expiresAt === clock.now() + 15_000,
        5_000,
        'a renewal after the restart',
      );
      // Past the deadline the claim had when its settlement failed.
      clock.advance(11_000);
      const other = await privatePools.open({ now: clock.now });
      expect(await other.claim()).toBeNull();
      expect(await holder.complete(turn)).toBe('settled');
    });

    it('gives up every turn of the replica itself, and not before', async () => {
      const clock = manualClock();
      const logger = recordingLogger();
      const pool = await privatePools.open({
        now: clock.now,
        renewEveryMs: 20,
        fenceAfterMs: 10_000,
        logger,
      });
      const lost: string[] = [];
      pool.onLeaseLost((token) => lost.push(token));
      await pool.enqueue(queued('A', clock.now()));
      await pool.enqueue(queued('B', clock.now()));
      const turns = [(await pool.claim()) as Turn, (await pool.claim()) as Turn];
      await redis.stop();

      clock.advance(9_999);
      const failedRenewals = () =>
        logger.lines.filter((line) => line.message.startsWith('lease renewal failed'));
      await eventually(() => failedRenewals().length >= 2, 5000, 'two failed renewals');
      expect(lost).toEqual([]);

      clock.advance(1);
      await eventually(() => lost.length === 2, 5000, 'both turns given up');
      expect(lost.sort()).toEqual(turns.map((turn) => turn.lease.token).sort());
      expect(
        logger.lines.some((line) => line.level === 'error' && line.message.startsWith('lease lost')),
      ).toBe(true);
      await redis.start();
    });
  });
});
