import { type Turn, defaultTenantShare, isSwitchboardError } from '@switchboard/core';
import { eventually } from '@switchboard/testkit/eventually';
import { describe, expect, it } from 'vitest';
import {
  REDIS_URL,
  manualClock,
  queued,
  recordingLogger,
  redisReachable,
  removePoolKeys,
  usePools,
} from './redis-harness.js';

const reachable = await redisReachable();

describe.skipIf(!reachable)('pool/register.lua', () => {
  const pools = usePools();

  describe('when a replica differs from the live replicas', () => {
    it('is refused with SB_STORE_CONFIG_MISMATCH naming each differing field', async () => {
      const clock = manualClock();
      await pools.open({ now: clock.now, pipelines: [{ id: 'p', max_concurrency: 3 }, { id: 'q' }] });
      const refusal = await pools
        .open({
          now: clock.now,
          concurrency: { global: 20, perSession: 2 },
          pipelines: [{ id: 'p', max_concurrency: 2 }, { id: 'r' }],
        })
        .catch((err: unknown) => err);
      expect(isSwitchboardError(refusal, 'SB_STORE_CONFIG_MISMATCH')).toBe(true);
      expect((refusal as Error).message).toContain(
        'pipelines.p.max_concurrency: this replica 2, the shared store 3',
      );
      expect((refusal as { details: { differences: string[] } }).details.differences).toEqual([
        'concurrency.session: this replica 2, the shared store 1',
        'pipelines.p.max_concurrency: this replica 2, the shared store 3',
        'pipelines.q: this replica absent, the shared store configured',
        'pipelines.r: this replica configured, the shared store absent',
      ]);
    });

    it("names a tenant's share and a pipeline's tenant that differ", async () => {
      const clock = manualClock();
      const share = { id: 'acme', maxConcurrency: 2, weight: 3, maxPending: Number.POSITIVE_INFINITY };
      await pools.open({ now: clock.now, tenants: [share] });
      const refusal = await pools
        .open({
          now: clock.now,
          tenants: [
            { ...share, weight: 1 },
            { ...share, id: 'bravo' },
          ],
          pipelines: [{ id: 'p' }, { id: 'q', tenant: 'bravo' }],
        })
        .catch((err: unknown) => err);
      expect((refusal as { details: { differences: string[] } }).details.differences).toEqual([
        'pipelines.q.tenant: this replica bravo, the shared store absent',
        'tenants.acme.weight: this replica 1, the shared store 3',
        'tenants.bravo: this replica configured, the shared store absent',
      ]);
    });

    it('joins when it agrees', async () => {
      const clock = manualClock();
      await pools.open({ now: clock.now });
      await expect(pools.open({ now: clock.now })).resolves.toBeDefined();
    });

    it('joins beside one that lists no tenant share when it lists only default ones', async () => {
      const clock = manualClock();
      await pools.open({ now: clock.now });
      const shares = [defaultTenantShare('default'), defaultTenantShare('acme')];
      await expect(pools.open({ now: clock.now, tenants: shares })).resolves.toBeDefined();
    });
  });

  describe('when no other replica is alive', () => {
    it('replaces the stored configuration once the other replica shut down', async () => {
      const clock = manualClock();
      const first = await pools.open({ now: clock.now, pipelines: [{ id: 'p', max_concurrency: 3 }] });
      await pools.shutdown(first);
      const second = await pools.open({ now: clock.now, pipelines: [{ id: 'p', max_concurrency: 2 }] });
      // The new limit holds: a third replica with the old one is refused.
      await expect(
        pools.open({ now: clock.now, pipelines: [{ id: 'p', max_concurrency: 3 }] }),
      ).rejects.toMatchObject({ code: 'SB_STORE_CONFIG_MISMATCH' });
      expect(second.replicaId).not.toBe(first.replicaId);
    });

    it("replaces it once the other replica's heartbeat expired", async () => {
      const clock = manualClock();
      await pools.open({ now: clock.now, leaseMs: 15_000, pipelines: [{ id: 'p', max_concurrency: 3 }] });
      clock.advance(14_999);
      await expect(
        pools.open({ now: clock.now, pipelines: [{ id: 'p', max_concurrency: 2 }] }),
      ).rejects.toMatchObject({ code: 'SB_STORE_CONFIG_MISMATCH' });
      clock.advance(1);
      await expect(
        pools.open({ now: clock.now, pipelines: [{ id: 'p', max_concurrency: 2 }] }),
      ).resolves.toBeDefined();
    });
  });

  describe('when a replica with other values registered while this replica was silent', () => {
    // The stalled replica's clock stands still, so its heartbeat lapses on the newcomer's clock.
    async function stalledReplica() {
      const stalledClock = manualClock();
      const clock = manualClock();
      const logger = recordingLogger();
      const stalled = await pools.open({
        now: stalledClock.now,
        renewEveryMs: 20,
        logger,
        pipelines: [{ id: 'p', max_concurrency: 3 }],
      });
      const lost: string[] = [];
      stalled.onLeaseLost((token) => lost.push(token));
      await stalled.enqueue(queued('A', stalledClock.now()));
      const turn = (await stalled.claim()) as Turn;
      clock.advance(15_000);
      const newcomer = await pools.open({ now: clock.now, pipelines: [{ id: 'p', max_concurrency: 2 }] });
      return { stalled, stalledClock, clock, logger, lost, turn, newcomer };
    }

    it('gives up its turns and refuses work while the other replica lives, naming the differences', async () => {
      const { stalled, stalledClock, logger, lost, turn } = await stalledReplica();
      await eventually(() => lost.length === 1, 5000, 'the turn given up at the next renewal');
      expect(lost).toEqual([turn.lease.token]);
      const mismatchLines = logger.lines.filter(
        (line) => line.level === 'error' && line.message.startsWith('config mismatch'),
      );
      expect(mismatchLines).toHaveLength(1);
      expect(mismatchLines[0]?.bindings.differences).toEqual([
        'pipelines.p.max_concurrency: this replica 3, the shared store 2',
      ]);

      const refusal = await stalled.enqueue(queued('B', stalledClock.now())).catch((err: unknown) => err);
      expect(isSwitchboardError(refusal, 'SB_STORE_CONFIG_MISMATCH')).toBe(true);
      expect(refusal).toMatchObject({ status: 503, retryAfterMs: 1000 });
      expect(await stalled.claim()).toBeNull();
      expect(await stalled.health()).toEqual({
        ok: false,
        detail:
          'config mismatch with the live replicas: pipelines.p.max_concurrency: this replica 3, the shared store 2',
      });
    });

    it('registers its configuration again once no other replica is alive', async () => {
      const { stalled, stalledClock, logger, newcomer } = await stalledReplica();
      await pools.shutdown(newcomer);
      await eventually(
        () =>
          logger.lines.some((line) =>
            line.message.startsWith('config replaced while this replica was silent'),
          ),
        5000,
        'the configuration registered again',
      );
      // Its values hold again: a replica with the newcomer's is refused.
      await expect(
        pools.open({ now: stalledClock.now, pipelines: [{ id: 'p', max_concurrency: 2 }] }),
      ).rejects.toMatchObject({ code: 'SB_STORE_CONFIG_MISMATCH' });
      expect(await stalled.enqueue(queued('B', stalledClock.now()))).toMatchObject({ accepted: true });
      expect(await stalled.health()).toEqual({ ok: true });
    });
  });

  describe("when Redis lost the pool's keys while replicas run", () => {
    it('registers again at the next call, which then goes through, and says so', async () => {
      const clock = manualClock();
      const logger = recordingLogger();
      const pool = await pools.open({ now: clock.now, logger });
      await pool.enqueue(queued('A', clock.now()));
      await removePoolKeys(REDIS_URL, pools.prefix);
      expect(await pool.enqueue(queued('B', clock.now()))).toMatchObject({ accepted: true });
      expect(await pool.stats()).toMatchObject({ pending: 1, sessions: 1 });
      expect(logger.lines.filter((line) => line.level === 'error').map((line) => line.message)).toEqual([
        'pool configuration missing in redis: registering again; what was queued is lost',
      ]);
    });
  });
});
