import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { REDIS_URL, manualClock, queued, redisReachable, usePools } from './redis-harness.js';

const reachable = await redisReachable();

describe.skipIf(!reachable)('stats-11.lua', () => {
  const pools = usePools();

  describe("when a pipeline's waiting set holds an entry whose message is gone (an older version's replica claimed it)", () => {
    it('drops it, and counts and ages only the messages still waiting', async () => {
      const clock = manualClock();
      const pool = await pools.open({ now: clock.now });
      await pool.enqueue(queued('A', clock.now()));
      const redis = new Redis(REDIS_URL);
      try {
        // Older than the real one, so it is the set's head.
        await redis.zadd(`{${pools.prefix}}:waiting:p`, 0, '999999');
        clock.advance(5_000);
        const stats = await pool.stats();
        expect(stats.pendingByPipeline).toMatchObject({ p: 1 });
        expect(stats.oldestWaitMsByPipeline).toMatchObject({ p: 5_000 });
        expect(await redis.zcard(`{${pools.prefix}}:waiting:p`)).toBe(1);
      } finally {
        redis.disconnect();
      }
    });
  });
});
