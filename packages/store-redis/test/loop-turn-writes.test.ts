import type { Socket } from 'node:net';
import type { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { connect, createRedisClient } from '../src/redis-connection.js';
import { REDIS_URL, countSocketWrites, redisReachable } from './redis-harness.js';

const reachable = await redisReachable();

describe.skipIf(!reachable)('the commands of one turn of the event loop leave in one socket write', () => {
  let client: Redis | undefined;
  afterEach(() => client?.disconnect());

  it('sends ten commands called in one turn in one write, answered in order', async () => {
    client = createRedisClient(REDIS_URL) as Redis;
    await connect(client, 1000);
    const counted = countSocketWrites(client);
    const replies = await Promise.all(Array.from({ length: 10 }, (_, index) => client?.echo(`c${index}`)));
    expect(replies).toEqual(Array.from({ length: 10 }, (_, index) => `c${index}`));
    expect(counted).toEqual({ writes: 1, chunks: 10 });
  });

  it('groups the commands of separate callbacks of one turn, not only of one callback', async () => {
    client = createRedisClient(REDIS_URL) as Redis;
    await connect(client, 1000);
    const counted = countSocketWrites(client);
    // Two timers due together run in one timers phase, each callback followed by its ticks.
    const replies = await Promise.all(
      ['a', 'b'].map(
        (text) =>
          new Promise<string | undefined>((resolve) => setTimeout(() => resolve(client?.echo(text)), 0)),
      ),
    );
    expect(replies).toEqual(['a', 'b']);
    expect(counted).toEqual({ writes: 1, chunks: 2 });
  });

  it('sends the commands of the next turn in a write of their own, and again after a reconnect', async () => {
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

  it('corks a socket once per turn and uncorks it fully, also one replaced while corked', async () => {
    client = createRedisClient(REDIS_URL) as Redis;
    await connect(client, 1000);
    const streamOf = (connected: Redis) => (connected as unknown as { stream: Socket }).stream;
    const replaced = streamOf(client);
    const lost = Promise.allSettled([client.ping(), client.ping()]);
    replaced.destroy();
    expect((await lost).map((settled) => settled.status)).toEqual(['rejected', 'rejected']);
    for (let reconnects = 0; reconnects < 3; reconnects += 1) {
      await new Promise<void>((resolve) => client?.once('ready', () => resolve()));
      if (reconnects < 2) client.disconnect(true);
    }
    const socket = streamOf(client);
    const replied = client.ping();
    expect(socket.writableCorked).toBe(1);
    expect(await replied).toBe('PONG');
    await new Promise((resolve) => setImmediate(resolve));
    expect(socket.writableCorked).toBe(0);
  });
});
