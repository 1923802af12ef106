import { randomUUID } from 'node:crypto';
import { bucketKey, createSendPacer } from '@switchboard/core';
import { rateBucketsContract } from '@switchboard/contracts';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type RedisRateBuckets, createRedisRateBuckets, rateBucketKeyOf } from '../src/index.js';
import { REDIS_URL, redisReachable, removePoolKeys } from './redis-harness.js';

const reachable = await redisReachable();

describe.skipIf(!reachable)('createRedisRateBuckets', () => {
  rateBucketsContract('redis', async ({ now }) => {
    const prefix = `sb-test-${randomUUID()}`;
    const buckets = await createRedisRateBuckets({ url: REDIS_URL, prefix, now });
    return {
      store: buckets,
      async close() {
        await buckets.close();
        await removePoolKeys(REDIS_URL, prefix);
      },
    };
  });

  describe('when two replicas pace the same chats', () => {
    let prefix: string;
    let replicas: RedisRateBuckets[];

    beforeEach(async () => {
      prefix = `sb-test-${randomUUID()}`;
      replicas = await Promise.all([1, 2].map(() => createRedisRateBuckets({ url: REDIS_URL, prefix })));
    });
    afterEach(async () => {
      await Promise.all(replicas.map((buckets) => buckets.close()));
      await removePoolKeys(REDIS_URL, prefix);
    });

    it('never lets them together exceed a limit', async () => {
      const rates = {
        enabled: true,
        perBot: { limit: 20, perMs: 1000, burst: 20 },
        perChat: { limit: 2, perMs: 500, burst: 2 },
        perGroup: null,
      };
      const granted: Array<{ chat: string; at: number }> = [];
      const chats = ['1', '2', '3', '4', '5', '6'];
      const signal = new AbortController().signal;
      await Promise.all(
        replicas.flatMap((buckets) => {
          const pacer = createSendPacer({ channel: 'tg', buckets, rates });
          return chats.map(async (chat) => {
            for (let i = 0; i < 5; i += 1) {
              await pacer.pace({ id: chat, group: false }, signal);
              granted.push({ chat, at: Date.now() });
            }
          });
        }),
      );
      expect(granted).toHaveLength(60);
      const spanOf = (times: number[]) => Math.max(...times) - Math.min(...times);
      // Shared buckets: 60 calls at 20 a second after a burst of 20 take 2 s (one replica's own
      // buckets would let its 30 through in 0.5 s); a chat's 10 at 2 per 500 ms, 2 s (not 0.75 s).
      expect(spanOf(granted.map((grant) => grant.at))).toBeGreaterThanOrEqual(1900);
      for (const chat of chats) {
        expect(
          spanOf(granted.filter((grant) => grant.chat === chat).map((grant) => grant.at)),
        ).toBeGreaterThanOrEqual(1900);
      }
    });
  });

  describe('when three replicas take from one tenant quota on Redis’ clock', () => {
    let prefix: string;
    let replicas: RedisRateBuckets[];
    const admin = new Redis(REDIS_URL);

    beforeEach(async () => {
      prefix = `sb-test-${randomUUID()}`;
      replicas = await Promise.all(
        [1, 2, 3].map(() => createRedisRateBuckets({ url: REDIS_URL, prefix, now: 'redis' })),
      );
    });
    afterEach(async () => {
      await Promise.all(replicas.map((buckets) => buckets.close()));
      await removePoolKeys(REDIS_URL, prefix);
    });
    afterAll(() => admin.disconnect());

    /** Redis' clock, ms: the one the buckets refill by. */
    const redisNow = async () => {
      const [seconds, micros] = await admin.time();
      return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
    };

    it('grants together at most 1% more than the limit and what refilled meanwhile', async () => {
      // 1000 a 10 s: a token back every 10 ms, so the run's own length counts too.
      const quota = { key: 'quota@acme:tenant:10000:', limit: 1000, perMs: 10_000, burst: 1000 };
      const startedAt = await redisNow();
      const granted = await Promise.all(
        replicas.map(async (buckets) => {
          let count = 0;
          // Each replica fires 20 takes at a time, 1500 in all: together far more than allowed.
          for (let round = 0; round < 75; round += 1) {
            const waits = await Promise.all(Array.from({ length: 20 }, () => buckets.take([quota])));
            count += waits.filter((wait) => wait === 0).length;
          }
          return count;
        }),
      );
      const elapsedMs = (await redisNow()) - startedAt;
      const total = granted.reduce((sum, count) => sum + count, 0);
      const allowed = quota.limit + Math.floor(elapsedMs / (quota.perMs / quota.limit));
      expect(total).toBeGreaterThanOrEqual(quota.limit);
      expect(total).toBeLessThanOrEqual(allowed + quota.limit * 0.01);
      // Every replica got some: they raced for one bucket, none had it alone.
      for (const count of granted) expect(count).toBeGreaterThan(0);
    });
  });

  describe('when a token is taken', () => {
    it("sets the bucket's key to expire when the bucket is full again", async () => {
      const prefix = `sb-test-${randomUUID()}`;
      const buckets = await createRedisRateBuckets({ url: REDIS_URL, prefix });
      const admin = new Redis(REDIS_URL);
      try {
        // Full again one interval (30 s) after the first token went.
        await buckets.take([{ key: bucketKey('tg', 'group', '-1'), limit: 2, perMs: 60_000, burst: 2 }]);
        const ttl = await admin.pttl(rateBucketKeyOf(prefix, 'tg:group:-1'));
        expect(ttl).toBeGreaterThan(20_000);
        expect(ttl).toBeLessThanOrEqual(30_000);
      } finally {
        await buckets.close();
        admin.disconnect();
        await removePoolKeys(REDIS_URL, prefix);
      }
    });
  });
});
