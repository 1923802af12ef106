import type { Turn } from '@switchboard/core';
import { eventually } from '@switchboard/testkit/eventually';
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
            {
              id: 'replica-a',
              heartbeatExpiresAt: clock.now() + HOUR_MS,
              alive: true,
              turnsRunning: 2,
              config: null,
            },
          ],
          [
            'replica-b',
            {
              id: 'replica-b',
              heartbeatExpiresAt: clock.now() + HOUR_MS,
              alive: true,
              turnsRunning: 1,
              config: null,
            },
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

  describe('when a replica dies without leaving', () => {
    it('leaves the list at the next renewal of another replica, not at the next registration', async () => {
      const clock = manualClock();
      const timing = { now: clock.now, leaseMs: HOUR_MS, fenceAfterMs: HOUR_MS / 2 };
      // replica-a never renews during the test: it is the dead one; replica-b renews at once.
      await pools.open({ ...timing, renewEveryMs: HOUR_MS / 4, replicaId: 'replica-a' });
      const b = await pools.open({ ...timing, renewEveryMs: 20, replicaId: 'replica-b' });
      const ids = async () => (await b.replicas()).map((replica) => replica.id).sort();
      expect(await ids()).toEqual(['replica-a', 'replica-b']);

      clock.advance(HOUR_MS + 1);
      await eventually(async () => (await ids()).length === 1, 5_000, 'replica-a gone from the list');
      expect(await ids()).toEqual(['replica-b']);
    });
  });

  describe('when a reload publishes a configuration', () => {
    it('raises the fleet version, names the publisher current and the others as they report, and forgets a dead replica', async () => {
      const clock = manualClock();
      const leases = { now: clock.now, leaseMs: 60_000, fenceAfterMs: 30_000, renewEveryMs: 15_000 };
      const a = await pools.open({ ...leases, replicaId: 'replica-a' });
      // No renewal runs: b's heartbeat outlives a's by this much.
      clock.advance(30_000);
      const b = await pools.open({ ...leases, replicaId: 'replica-b' });
      expect(await a.fleetConfig()).toBeNull();

      expect(await a.publishConfig('d1')).toBe(1);
      expect(await b.publishConfig('d2')).toBe(2);
      expect(await a.fleetConfig()).toEqual({ version: 2, digest: 'd2' });
      await a.reportConfig({ version: 1, state: 'differs', digest: 'd1', detail: 'the file | differs' });

      const reports = async () =>
        new Map((await b.replicas()).map((replica) => [replica.id, replica.config]));
      expect(await reports()).toEqual(
        new Map([
          ['replica-a', { version: 1, state: 'differs', digest: 'd1', detail: 'the file | differs' }],
          ['replica-b', { version: 2, state: 'current', digest: 'd2' }],
        ]),
      );

      // Replica a's heartbeat lapses; the next registration drops it with its report.
      clock.advance(30_001);
      await pools.open({ ...leases, replicaId: 'replica-c' });
      expect([...(await reports()).keys()].sort()).toEqual(['replica-b', 'replica-c']);

      // Out of the live set (its configuration differs), a replica that keeps reporting is
      // listed as not alive with its report, until the report is a minute old.
      await a.reportConfig({ version: 2, state: 'differs', digest: 'd1', detail: 'the file differs' });
      expect((await b.replicas()).find((replica) => replica.id === 'replica-a')).toMatchObject({
        alive: false,
        heartbeatExpiresAt: null,
        config: { version: 2, state: 'differs' },
      });
      clock.advance(60_001);
      expect((await b.replicas()).map((replica) => replica.id)).not.toContain('replica-a');
    });
  });

  describe('when a replica that reported its configuration shuts down', () => {
    it('takes its report with it: the others no longer list it', async () => {
      const clock = manualClock();
      const leases = {
        now: clock.now,
        leaseMs: HOUR_MS,
        fenceAfterMs: HOUR_MS / 2,
        renewEveryMs: HOUR_MS / 4,
      };
      const a = await pools.open({ ...leases, replicaId: 'replica-a' });
      const b = await pools.open({ ...leases, replicaId: 'replica-b' });
      await a.publishConfig('d1');
      await b.reportConfig({ version: 1, state: 'current', digest: 'd1' });
      expect((await b.replicas()).map((replica) => replica.id).sort()).toEqual(['replica-a', 'replica-b']);

      await a.shutdown();
      expect((await b.replicas()).map((replica) => replica.id)).toEqual(['replica-b']);
    });
  });
});
