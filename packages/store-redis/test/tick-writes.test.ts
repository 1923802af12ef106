import type { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { connect, createRedisClient } from '../src/redis-connection.js';
import { REDIS_URL, countSocketWrites, redisReachable } from './redis-harness.js';

const reachable = await redisReachable();

describe.skipIf(!reachable)('the commands of one tick leave in one socket write', () => {
  let client: Redis | undefined;
  afterEach(() => client?.disconnect());

  it('sends ten commands called in one tick in one write, answered in order', async () => {
    client = createRedisClient(REDIS_URL) as Redis;
    await connect(client, 1000);
    const counted = countSocketWrites(client);
    const replies = await Promise.all(Array.from({ length: 10 }, (_, index) => client?.echo(`c${index}`)));
    expect(replies).toEqual(Array.from({ length: 10 }, (_, index) => `c${index}`));
    expect(counted).toEqual({ writes: 1, chunks: 10 });
  });

  it('sends the commands of the next tick in a write of their own, and again after a reconnect', async () => {
    client = createRedisClient(REDIS_URL) as Redis;
    await connect(client, 1000);
    let counted = countSocketWrites(client);
    await Promise.all([client.ping(), client.ping()]);
    await Promise.all([client.ping(), client.ping(), client.ping()]);
    expect(counted).toEqual({ writes: 2, chunks: 5 });
    client.disconnect(true);
    await new Promise<void>((resolve) => client?.once('ready', () => resolve()));
    counted = countSocketWrites(client);
    await Promise.all([client.ping(), client.ping()]);
    expect(counted).toEqual({ writes: 1, chunks: 2 });
  });
});
