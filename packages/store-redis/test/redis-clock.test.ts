import { Redis } from 'ioredis';
import { describe, expect, it, vi } from 'vitest';
import { eventually } from '@switchboard/testkit/eventually';
import { FAIL_FAST_OPTIONS } from '../src/index.js';
import { startRedisClock } from '../src/redis-clock.js';
import { recordingLogger, REDIS_URL, redisReachable } from './redis-harness.js';

const reachable = await redisReachable();

describe.skipIf(!reachable)('startRedisClock', () => {
  describe('when Redis runs on this host', () => {
    it('reads the same time as this host, to within a few ms', async () => {
      const client = new Redis(REDIS_URL, FAIL_FAST_OPTIONS);
      await client.connect();
      const clock = await startRedisClock(client, {
        remeasureEveryMs: 60_000,
        logger: recordingLogger(),
        prefix: 'clock',
      });
      try {
        expect(Math.abs(clock.now() - Date.now())).toBeLessThan(50);
      } finally {
        clock.stop();
        client.disconnect();
      }
    });
  });

  describe('when a measurement waits behind a blocking command on the connection (a WAIT)', () => {
    it('keeps the read with the shortest round trip, so the wait does not skew the offset', async () => {
      const client = new Redis(REDIS_URL, FAIL_FAST_OPTIONS);
      await client.connect();
      // Blocks this connection 800 ms; the first TIME queues behind it.
      const blocked = client.blpop(`sb-test-clock-${process.pid}`, 0.8);
      const clock = await startRedisClock(client, {
        remeasureEveryMs: 60_000,
        logger: recordingLogger(),
        prefix: 'clock',
      });
      try {
        await blocked;
        const [seconds, microseconds] = await client.time();
        const redisMs = Number(seconds) * 1000 + Number(microseconds) / 1000;
        expect(Math.abs(clock.now() - redisMs)).toBeLessThan(50);
      } finally {
        clock.stop();
        client.disconnect();
      }
    });
  });

  describe('when its connection comes back (it may reach another server after a failover)', () => {
    it('measures again at once', async () => {
      const client = new Redis(REDIS_URL, { ...FAIL_FAST_OPTIONS, retryStrategy: () => 10 });
      await client.connect();
      const clock = await startRedisClock(client, {
        remeasureEveryMs: 60_000,
        logger: recordingLogger(),
        prefix: 'clock',
      });
      const reads = vi.spyOn(client, 'time');
      try {
        client.disconnect(true);
        await eventually(() => reads.mock.calls.length > 0, 5000, 'TIME read after the reconnect');
      } finally {
        reads.mockRestore();
        clock.stop();
        client.disconnect();
      }
    });
  });

  describe("when this host's clock steps between two measurements", () => {
    it("keeps reading Redis' time: the step does not move it until the next measurement", async () => {
      const client = new Redis(REDIS_URL, FAIL_FAST_OPTIONS);
      await client.connect();
      const clock = await startRedisClock(client, {
        remeasureEveryMs: 60_000,
        logger: recordingLogger(),
        prefix: 'clock',
      });
      const wall = Date.now;
      // The host's clock jumps 30 s ahead (an NTP step); its monotonic clock does not.
      const stepped = vi.spyOn(Date, 'now').mockImplementation(() => wall() + 30_000);
      try {
        const [seconds, microseconds] = await client.time();
        const redisMs = Number(seconds) * 1000 + Number(microseconds) / 1000;
        expect(Math.abs(clock.now() - redisMs)).toBeLessThan(50);
      } finally {
        stepped.mockRestore();
        clock.stop();
        client.disconnect();
      }
    });
  });

  describe("when this host's monotonic clock stood still (the host slept)", () => {
    it("measures again at once and reads Redis' time, not a minute later", async () => {
      const client = new Redis(REDIS_URL, FAIL_FAST_OPTIONS);
      await client.connect();
      const clock = await startRedisClock(client, {
        remeasureEveryMs: 60_000,
        logger: recordingLogger(),
        prefix: 'clock',
      });
      const monotonic = performance.now.bind(performance);
      const slept = vi.spyOn(performance, 'now').mockImplementation(() => monotonic() - 30_000);
      try {
        const redisNow = async () => {
          const [seconds, microseconds] = await client.time();
          return Number(seconds) * 1000 + Number(microseconds) / 1000;
        };
        clock.now();
        await eventually(async () => Math.abs(clock.now() - (await redisNow())) < 50, 1_000);
      } finally {
        slept.mockRestore();
        clock.stop();
        client.disconnect();
      }
    });
  });
});
