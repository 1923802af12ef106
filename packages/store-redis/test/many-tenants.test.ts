import { describe, expect, it } from 'vitest';
import { manualClock, queued, redisReachable, usePools } from './redis-harness.js';

const reachable = await redisReachable();

/** `count` tenants, each with a pipeline of its own and a share that makes them compete. */
function tenantsOf(count: number) {
  const ids = Array.from({ length: count }, (_, index) => `t${index}`);
  return {
    pipelines: ids.map((id) => ({ id: `p-${id}`, tenant: id })),
    tenants: ids.map((id) => ({ id, maxConcurrency: 2, weight: 2, maxPending: 100 })),
  };
}

describe.skipIf(!reachable)('a pool shared by a thousand tenants', () => {
  const pools = usePools();

  it('registers, accepts and claims', async () => {
    const clock = manualClock();
    const pool = await pools.open({ now: clock.now, ...tenantsOf(1000) });
    expect(await pool.enqueue(queued('s', clock.now(), { pipeline: 'p-t999' }))).toMatchObject({
      accepted: true,
    });
    expect((await pool.claim())?.pipeline).toBe('p-t999');
  }, 30_000);
});
