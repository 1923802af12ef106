import { randomUUID } from 'node:crypto';
import { type Server, type Socket, connect, createServer } from 'node:net';
import { postgresReachable } from '@switchboard/testkit/postgres';
import { redisReachable } from '@switchboard/testkit/redis';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { startFakePipeline } from './fake-pipeline.js';
import { eventually, get, post, startServe, tempDir, useCleanups, writeConfig } from './serve-process.js';
import { type SharedStores, redisConfig, sharedStores } from './shared-stores.js';

const cleanup = useCleanups();
const reachable = (await redisReachable()) && (await postgresReachable());

/**
 * A TCP proxy to PostgreSQL that `freeze` stops passing bytes through, both ways, leaving every
 * connection (and every new one) open: the replica behind it then waits on each database write, as it would on a
 * database that stopped answering, until it is killed.
 */
async function freezableProxy(target: URL): Promise<{ url: string; freeze(): void }> {
  const sockets = new Set<Socket>();
  let frozen = false;
  const server: Server = createServer((client) => {
    const upstream = connect(Number(target.port || 5432), target.hostname);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('error', () => {});
      socket.on('close', () => {
        client.destroy();
        upstream.destroy();
      });
    }
    // A connection opened once frozen is held as well: it never reaches the database.
    if (frozen) return;
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanup(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => server.close(resolve));
  });
  const { port } = server.address() as { port: number };
  const url = new URL(target);
  url.hostname = '127.0.0.1';
  url.port = String(port);
  return {
    url: url.toString(),
    freeze() {
      frozen = true;
      for (const socket of sockets) {
        socket.unpipe();
        socket.pause();
      }
    },
  };
}

/** What the pool's id key says of `messageId` (`settled:<pipeline>` once its outcome is final). */
async function idKey(stores: SharedStores, messageId: string): Promise<string | null> {
  const redis = new Redis(stores.redisUrl);
  try {
    return await redis.get(`{${stores.prefix}}:id:${messageId}`);
  } finally {
    redis.disconnect();
  }
}

describe.skipIf(!reachable)('a replica killed between a settlement and its records (store: redis)', () => {
  it('leaves the dead letter and its final status to another replica: one record, final status', {
    timeout: 120_000,
  }, async () => {
    const backend = await startFakePipeline();
    cleanup(() => backend.close());
    // Fails fatally: the message is dead-lettered at its first settlement.
    backend.respond = async () => ({ status: 400, body: { error: 'bad' } });
    const pipeline = { id: 'bot', yaml: `{ id: bot, type: http, url: "${backend.url}" }` };
    const stores = sharedStores(cleanup);
    const proxy = await freezableProxy(new URL(stores.postgresUrl));

    const dyingDir = tempDir();
    const dying = await startServe({
      dir: dyingDir,
      configPath: writeConfig(dyingDir, redisConfig({ ...stores, postgresUrl: proxy.url }, '', pipeline)),
    });
    cleanup(() => dying.stop('SIGKILL'));
    proxy.freeze();
    const accepted = await post(`${dying.url}/v1/messages`, {
      session_id: `s-${randomUUID()}`,
      user_id: 'u1',
      text: 'dead on arrival',
      wait: false,
    });
    const messageId = accepted.body?.id as string;
    expect(accepted.status).toBe(202);
    // The settlement is in Redis; its records wait on the frozen database: killed right there.
    await eventually(async () => (await idKey(stores, messageId))?.startsWith('settled:'), 30_000, 'settled');
    await dying.stop('SIGKILL');

    const otherDir = tempDir();
    const other = await startServe({
      dir: otherDir,
      configPath: writeConfig(otherDir, redisConfig(stores, '', pipeline)),
    });
    cleanup(() => other.stop());
    const recorded = await eventually(
      async () => {
        const path = await get(`${other.url}/admin/messages/${messageId}`);
        return path.status === 200 && path.body.audit.length > 0 && path.body.audit;
      },
      60_000,
      'the dead letter recorded by the other replica',
    );
    expect(recorded).toEqual([expect.objectContaining({ outcome: 'dead_lettered', reason: 'fatal_error' })]);
    expect((await get(`${other.url}/v1/messages/${messageId}`)).body).toMatchObject({
      id: messageId,
      status: 'dead_lettered',
    });
    expect(other.logs.some((line) => line.msg?.startsWith('unrecorded outcome recovered'))).toBe(true);
    // Recorded once: one dead letter to replay.
    expect((await get(`${other.url}/admin/dead-letters`)).body.items).toHaveLength(1);
  });
});
