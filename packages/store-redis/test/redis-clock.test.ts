import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { FAIL_FAST_OPTIONS } from '../src/index.js';
import { startRedisClock } from '../src/redis-clock.js';
import { recordingLogger, REDIS_URL, redisReachable } from './redis-harness.js';

const reachable = await redisReachable();

describe.skipIf(!reachable)('startRedisClock', () => {
  describe('when Redis runs on this host', () => {
    it('reads the same time as this host, to within a few ms', async () => {
      const client = new Redis(REDIS_URL, FAIL_FAST_OPTIONS);
      await client.connect();
      const clock = await startRedisClock(client, { remeasureEveryMs: 60_000, logger: recordingLogger() });
      try {
        expect(Math.abs(clock.now() - Date.now())).toBeLessThan(50);
      } finally {
        clock.stop();
        client.disconnect();
      }
    });
  });
});
