import { createMemoryAuditLog } from '@switchboard/core';
import { Redis } from 'ioredis';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { DATA_FORMAT_VERSION, dataFormatKeyOf } from '../src/data-format.js';
import {
  createAuditOutbox,
  createRedisChannelLeases,
  createRedisKeptOutcomes,
  createRedisRateBuckets,
  createRedisReplyOutbox,
} from '../src/index.js';
import { REDIS_URL, queued, redisReachable, removePoolKeys, usePools } from './redis-harness.js';

const reachable = await redisReachable();

/** Every store of the package but the pool, opened on `prefix` and closed again. */
const OTHER_STORES: Array<[string, (prefix: string) => Promise<unknown>]> = [
  [
    'the audit outbox',
    async (prefix) =>
      (await createAuditOutbox({ url: REDIS_URL, prefix, inner: createMemoryAuditLog() })).shutdown(),
  ],
  [
    'the reply outbox',
    async (prefix) => (await createRedisReplyOutbox({ url: REDIS_URL, prefix, leaseMs: 30_000 })).close(),
  ],
  [
    'the channel leases',
    async (prefix) => (await createRedisChannelLeases({ url: REDIS_URL, prefix })).close(),
  ],
  ['the rate buckets', async (prefix) => (await createRedisRateBuckets({ url: REDIS_URL, prefix })).close()],
  [
    'the kept outcomes',
    async (prefix) => (await createRedisKeptOutcomes({ url: REDIS_URL, prefix })).close(),
  ],
];

describe.skipIf(!reachable)('the data format under a prefix', () => {
  const pools = usePools();
  const redis = new Redis(REDIS_URL);
  const formatKey = () => dataFormatKeyOf(pools.prefix);
  afterEach(() => removePoolKeys(REDIS_URL, pools.prefix));
  afterAll(() => redis.disconnect());

  describe('when nothing is stored under the prefix yet', () => {
    it('records the format this build writes when the pool starts', async () => {
      expect(await redis.exists(formatKey())).toBe(0);
      await pools.open();
      expect(await redis.get(formatKey())).toBe(String(DATA_FORMAT_VERSION));
    });

    it.each(OTHER_STORES)('records it when %s starts', async (_store, open) => {
      await open(pools.prefix);
      expect(await redis.get(formatKey())).toBe(String(DATA_FORMAT_VERSION));
    });
  });

  describe('when a newer build recorded its format', () => {
    const newer = String(DATA_FORMAT_VERSION + 1);

    it('refuses to start the pool with SB_STORE_FORMAT_UNSUPPORTED naming both formats, changing nothing', async () => {
      await redis.set(formatKey(), newer);
      const refusal = await pools.open().catch((err: unknown) => err);
      expect(refusal).toMatchObject({
        code: 'SB_STORE_FORMAT_UNSUPPORTED',
        details: { store: 'redis', prefix: pools.prefix, found: newer, reads: DATA_FORMAT_VERSION },
      });
      expect((refusal as Error).message).toContain(
        `redis holds data format ${newer}, this build reads format ${DATA_FORMAT_VERSION}`,
      );
      expect(await redis.get(formatKey())).toBe(newer);
      // Refused before registering: the configuration was not written.
      expect(await redis.exists(`{${pools.prefix}}:config`)).toBe(0);
    });

    it.each(OTHER_STORES)('refuses to start %s the same way', async (_store, open) => {
      await redis.set(formatKey(), newer);
      await expect(open(pools.prefix)).rejects.toMatchObject({
        code: 'SB_STORE_FORMAT_UNSUPPORTED',
        details: { store: 'redis', found: newer, reads: DATA_FORMAT_VERSION },
      });
    });

    it('refuses a format it does not know at all', async () => {
      await redis.set(formatKey(), 'not a version');
      await expect(pools.open()).rejects.toMatchObject({
        code: 'SB_STORE_FORMAT_UNSUPPORTED',
        details: { found: 'not a version' },
      });
    });
  });

  describe("when the prefix holds this build's format", () => {
    it('starts the pool, which works, and keeps the format', async () => {
      await redis.set(formatKey(), String(DATA_FORMAT_VERSION));
      const pool = await pools.open();
      expect(await pool.enqueue(queued('A', Date.now()))).toMatchObject({ accepted: true });
      expect(await redis.get(formatKey())).toBe(String(DATA_FORMAT_VERSION));
    });

    it.each(OTHER_STORES)('starts %s', async (_store, open) => {
      await redis.set(formatKey(), String(DATA_FORMAT_VERSION));
      await expect(open(pools.prefix)).resolves.not.toThrow();
    });
  });
});
