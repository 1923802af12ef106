import { type Turn, isSwitchboardError } from '@switchboard/core';
import { eventually } from '@switchboard/testkit/eventually';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manualClock, queued, redisReachable, startPrivateRedis, usePools } from './redis-harness.js';

const reachable = await redisReachable();

describe.skipIf(!reachable)('the pool while Redis is down', () => {
  let redis: Awaited<ReturnType<typeof startPrivateRedis>>;
  const pools = usePools(() => redis.url);
  beforeAll(async () => {
    redis = await startPrivateRedis();
  });
  afterAll(async () => {
    await redis?.remove();
  });

  it('rejects enqueues at once with a retryable SB_STORE_UNAVAILABLE, and works again once Redis is back', async () => {
    const clock = manualClock();
    const pool = await pools.open({ now: clock.now, refusalRetryAfterMs: 2500 });
    await pool.enqueue(queued('A', clock.now()));
    const running = (await pool.claim()) as Turn;
    await pool.enqueue(queued('B', clock.now()));
    await redis.stop();

    const startedAt = Date.now();
    const refusal = await pool.enqueue(queued('C', clock.now())).catch((err: unknown) => err);
    expect(Date.now() - startedAt).toBeLessThan(500);
    expect(isSwitchboardError(refusal, 'SB_STORE_UNAVAILABLE')).toBe(true);
    expect(refusal).toMatchObject({ retryable: true, retryAfterMs: 2500 });
    expect(await pool.health()).toMatchObject({
      ok: false,
      detail: expect.stringMatching(/^redis is unreachable/),
    });

    await redis.start();
    await eventually(
      () =>
        pool.enqueue(queued('C', clock.now())).then(
          (result) => result.accepted,
          () => false,
        ),
      10_000,
      'an enqueue accepted after the restart',
    );
    // What was written before the outage is still there, and the running turn settles.
    expect(await pool.complete(running)).toBe('settled');
    expect(await pool.stats()).toMatchObject({ pending: 2, inflight: 0, sessions: 2 });
    expect(await pool.health()).toEqual({ ok: true });
  });

  it('wakes the other replicas again once Redis is back', async () => {
    const clock = manualClock();
    const first = await pools.open({ now: clock.now });
    const second = await pools.open({ now: clock.now });
    let wakeups = 0;
    second.onRunnable(() => {
      wakeups += 1;
    });
    await redis.stop();
    await redis.start();
    await eventually(
      () =>
        first.enqueue(queued('A', clock.now())).then(
          (result) => result.accepted,
          () => false,
        ),
      10_000,
      'an enqueue accepted after the restart',
    );
    await eventually(() => wakeups > 0, 10_000, 'the other replica woken after the restart');
  });

  it('is not ready when Redis may evict keys', async () => {
    const pool = await pools.open({ now: manualClock().now });
    const admin = await import('ioredis').then(({ Redis }) => new Redis(redis.url));
    try {
      await admin.config('SET', 'maxmemory-policy', 'allkeys-lru');
      expect(await pool.health()).toEqual({
        ok: false,
        detail:
          'redis maxmemory-policy is allkeys-lru: set it to noeviction, or queued messages may be evicted',
      });
    } finally {
      await admin.config('SET', 'maxmemory-policy', 'noeviction');
      admin.disconnect();
    }
  });

  it('refuses to start with SB_STORE_UNAVAILABLE when Redis does not answer', async () => {
    await redis.stop();
    try {
      await expect(pools.open({ now: manualClock().now })).rejects.toMatchObject({
        code: 'SB_STORE_UNAVAILABLE',
      });
    } finally {
      await redis.start();
    }
  });
});
