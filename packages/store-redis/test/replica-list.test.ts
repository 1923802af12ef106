import type { Turn } from '@switchboard/core';
import { describe, expect, it } from 'vitest';
import { manualClock, queued, redisReachable, usePools } from './redis-harness.js';

const reachable = await redisReachable();
const HOUR_MS = 3_600_000;

describe.skipIf(!reachable)('pool/replicas.lua', () => {
  const pools = usePools();

  describe('when operators list the replicas of a pool', () => {
    it('names each with its heartbeat and the turns it runs, and a lapsed one as not alive', async () => {
      const clock = manualClock();
      // No renewal runs during the test: the heartbeats stay where the registration put them.
      const leases = {
        now: clock.now,
        leaseMs: HOUR_MS,
        fenceAfterMs: HOUR_MS / 2,
        renewEveryMs: HOUR_MS / 4,
      };
      const a = await pools.open({ ...leases, replicaId: 'replica-a' });
      const b = await pools.open({ ...leases, replicaId: 'replica-b' });
      for (const session of ['A', 'B', 'C']) await a.enqueue(queued(session, clock.now()));
      expect(await a.claim()).not.toBeNull();
      expect(await a.claim()).not.toBeNull();
      const onB = (await b.claim()) as Turn;

      const byId = async () => new Map((await b.replicas()).map((replica) => [replica.id, replica]));
      expect(await byId()).toEqual(
        new Map([
          [
            'replica-a',
            { id: 'replica-a', heartbeatExpiresAt: clock.now() + HOUR_MS, alive: true, turnsRunning: 2 },
          ],
          [
            'replica-b',
            { id: 'replica-b', heartbeatExpiresAt: clock.now() + HOUR_MS, alive: true, turnsRunning: 1 },
          ],
        ]),
      );

      expect(await b.complete(onB)).toBe('settled');
      clock.advance(HOUR_MS + 1);
      const later = await byId();
      expect(later.get('replica-a')).toMatchObject({ alive: false, turnsRunning: 2 });
      expect(later.get('replica-b')).toMatchObject({ alive: false, turnsRunning: 0 });
    });
  });
});
