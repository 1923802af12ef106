import { type Turn, isSwitchboardError } from '@switchboard/core';
import { eventually } from '@switchboard/testkit/eventually';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { FAIL_FAST_OPTIONS, createRedisQueryPool } from '../src/index.js';
import { poolKeysOf } from '../src/pool-keys.js';
import {
  REDIS_URL,
  manualClock,
  queued,
  recordingLogger,
  redisReachable,
  usePools,
  usePrivateRedis,
} from './redis-harness.js';

const reachable = await redisReachable();

describe('the lease timing', () => {
  const base = { url: 'redis://127.0.0.1:1', prefix: 'unused', concurrency: { global: 1, perSession: 1 } };
  const open = (timing: { leaseMs?: number; renewEveryMs?: number; fenceAfterMs?: number }) =>
    createRedisQueryPool({
      ...base,
      limits: { maxPending: 1, maxPendingPerSession: 1 },
      pipelines: [],
      ...timing,
    }).catch((err: unknown) => err);

  it('is refused with SB_CONFIG_INVALID when fencing could end after the lease, naming the option', async () => {
    const refusal = await open({ leaseMs: 12_000, fenceAfterMs: 10_000 });
    expect(isSwitchboardError(refusal, 'SB_CONFIG_INVALID')).toBe(true);
    expect((refusal as { details: { problems: string[] } }).details.problems).toEqual([
      'fenceAfterMs: with the 2000 ms command timeout must end before leaseMs (12000 ms), got 10000 ms',
    ]);
  });

  it('is refused when renewals come no more often than fencing', async () => {
    const refusal = await open({ renewEveryMs: 10_000 });
    expect((refusal as { details: { problems: string[] } }).details.problems).toEqual([
      'renewEveryMs: must be less than fenceAfterMs (10000 ms), got 10000 ms',
    ]);
  });
});

describe.skipIf(!reachable)('pool/renew.lua and fencing', () => {
  const pools = usePools();

  describe('when a pipeline has nothing left ready or waiting', () => {
    it('leaves the set of pipelines every claim looks at, and comes back with its next message', async () => {
      const pool = await pools.open({ renewEveryMs: 20 });
      const redis = new Redis(REDIS_URL);
      try {
        const pipelines = async () => (await redis.smembers(`{${pools.prefix}}:pipelines`)).sort();
        await pool.enqueue(queued('A', Date.now()));
        expect(await pipelines()).toEqual(['p']);
        expect(await pool.complete((await pool.claim()) as Turn)).toBe('settled');
        await eventually(async () => (await pipelines()).length === 0, 5000, 'p out of the set');

        await pool.enqueue(queued('B', Date.now()));
        expect(await pipelines()).toEqual(['p']);
        expect((await pool.claim())?.session).toBe('B');
      } finally {
        redis.disconnect();
      }
    });
  });

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
    const redis = usePrivateRedis();
    const privatePools = redis.pools;

    it('keeps renewing the lease of a turn whose settlement failed, so it can be written again', async () => {
      const clock = manualClock();
      const holder = await privatePools.open({ now: clock.now, renewEveryMs: 20, leaseMs: 15_000 });
      await holder.enqueue(queued('A', clock.now()));
      const turn = (await holder.claim()) as Turn;
      await redis.server.stop();
      await expect(holder.complete(turn)).rejects.toMatchObject({ code: 'SB_STORE_UNAVAILABLE' });
      await redis.server.start();
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
      await redis.server.stop();

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
      await redis.server.start();
    });
  });

  describe('when a renewal hangs (a client without a command timeout)', () => {
    // CLIENT PAUSE holds every write of the Redis: only on one of the test's own.
    const redis = usePrivateRedis();
    const privatePools = redis.pools;

    it('gives up every turn once fenceAfterMs passed, while the renewal is still on its way', async () => {
      const clock = manualClock();
      const { commandTimeout: _none, ...withoutTimeout } = FAIL_FAST_OPTIONS;
      const pool = await privatePools.open({
        now: clock.now,
        renewEveryMs: 20,
        createClient: () => new Redis(redis.url(), withoutTimeout),
      });
      const lost: string[] = [];
      pool.onLeaseLost((token) => lost.push(token));
      await pool.enqueue(queued('A', clock.now()));
      const turn = (await pool.claim()) as Turn;
      const admin = new Redis(redis.url());
      try {
        // Longer than the test waits: the renewal under way hangs until the pause ends.
        await admin.client('PAUSE', 8000, 'WRITE');
        clock.advance(10_000);
        await eventually(() => lost.length === 1, 3000, 'the turn given up while the renewal hangs');
        expect(lost).toEqual([turn.lease.token]);
      } finally {
        await admin.client('UNPAUSE');
        admin.disconnect();
      }
    });

    it('extends no lease when Redis applies the hung renewal after the fencing deadline (judged on TIME)', async () => {
      // Redis' clock, as in production: the renewal names when its replica fences, on TIME.
      const pool = await privatePools.open({ leaseMs: 4000, renewEveryMs: 300, fenceAfterMs: 1200 });
      const lost: string[] = [];
      pool.onLeaseLost((token) => lost.push(token));
      await pool.enqueue(queued('A', Date.now()));
      const turn = (await pool.claim()) as Turn;
      const { keys, replicas } = poolKeysOf(privatePools.prefix);
      const leaseDeadline = async () => Number(await redis.admin.zscore(keys[5] as string, turn.lease.token));
      const heartbeat = async () => Number(await redis.admin.zscore(replicas, pool.replicaId));
      const claimedUntil = await leaseDeadline();
      await eventually(
        async () => (await leaseDeadline()) > claimedUntil,
        3000,
        'a renewal before the pause',
      );
      // The renewal sent meanwhile times out (2 s) and waits in Redis until the pause ends.
      await redis.admin.client('PAUSE', 2600, 'WRITE');
      const renewedUntil = await leaseDeadline();
      const heartbeatBefore = await heartbeat();
      await eventually(() => lost.length === 1, 3000, 'the turn given up by fencing');
      // The held renewal ran once the heartbeat moved (a fenced renewal still renews it).
      await eventually(async () => (await heartbeat()) > heartbeatBefore, 5000, 'the held renewal applied');
      expect(await leaseDeadline()).toBe(renewedUntil);
      expect(lost).toEqual([turn.lease.token]);
    });
  });
});
