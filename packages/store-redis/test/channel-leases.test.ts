import { randomUUID } from 'node:crypto';
import { channelLeasesContract } from '@switchboard/contracts';
import { describe } from 'vitest';
import { createRedisChannelLeases } from '../src/index.js';
import { REDIS_URL, redisReachable, removePoolKeys } from './redis-harness.js';

const reachable = await redisReachable();

describe.skipIf(!reachable)('createRedisChannelLeases', () => {
  channelLeasesContract('redis', async () => {
    const prefix = `sb-test-${randomUUID()}`;
    const leases = await createRedisChannelLeases({ url: REDIS_URL, prefix });
    return {
      store: leases,
      async close() {
        await leases.close();
        await removePoolKeys(REDIS_URL, prefix);
      },
    };
  });
});
