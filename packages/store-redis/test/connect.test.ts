import { once } from 'node:events';
import type { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { connect, createRedisClient } from '../src/redis-connection.js';
import { REDIS_URL, redisReachable } from './redis-harness.js';

const reachable = await redisReachable();

describe.skipIf(!reachable)('connect: the wait for a client to be ready', () => {
  let client: Redis | undefined;
  afterEach(() => client?.disconnect());

  it('is one wait for all the stores opening on one client: no listener pair each, all answered ready', async () => {
    client = createRedisClient(REDIS_URL) as Redis;
    const readyListeners = client.listenerCount('ready');
    const waits = Array.from({ length: 20 }, () => connect(client as Redis, 1000));
    // Node warns from 11 listeners of one event on: one partition each would pass it.
    expect(client.listenerCount('ready') - readyListeners).toBeLessThanOrEqual(1);
    await Promise.all(waits);
    expect(client.status).toBe('ready');
    expect(await client.ping()).toBe('PONG');
  });

  it('waits anew after the client went away and came back', async () => {
    client = createRedisClient(REDIS_URL) as Redis;
    await connect(client, 1000);
    const closed = once(client, 'close');
    client.disconnect(true);
    await closed;
    expect(client.status).not.toBe('ready');
    await Promise.all([connect(client, 1000), connect(client, 1000)]);
    expect(client.status).toBe('ready');
  });
});

describe("a client's reconnect attempts", () => {
  it('back off to at most a second apart however long Redis was away, spread over half of it', () => {
    const client = createRedisClient(REDIS_URL) as Redis;
    const delayOf = client.options.retryStrategy;
    if (typeof delayOf !== 'function') throw new Error('no retryStrategy');
    const delays = Array.from({ length: 40 }, (_, index) => Number(delayOf(index + 1)));
    expect(delays[0]).toBeLessThanOrEqual(50);
    // After 10 s away (ioredis' own strategy waits 5 s by then): the next attempt within a second.
    for (const delay of delays) expect(delay).toBeLessThanOrEqual(1000);
    expect(delays.slice(10).every((delay) => delay >= 500)).toBe(true);
    // Jitter: replicas that lost Redis together do not come back in step.
    expect(new Set(delays.slice(10)).size).toBeGreaterThan(10);
  });
});
