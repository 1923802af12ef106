import { randomUUID } from 'node:crypto';
import { POSTGRES_URL, dropSchema, postgresReachable, randomSchemaName } from '@switchboard/testkit/postgres';
import { startPrivateCluster } from '@switchboard/testkit/redis';
import { Cluster } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { get, post, useCleanups } from './serve-process.js';
import { startReplicas } from './shared-stores.js';

const cleanup = useCleanups();
const reachable = await postgresReachable();

/**
 * Two `switchboard serve` replicas with `store.cluster`: the seed nodes of a Redis Cluster of three
 * primaries of this file's own (docs/design.md §5 "Redis Cluster").
 */
describe.skipIf(!reachable)('store: redis on a Redis Cluster (end to end)', () => {
  let cluster: Awaited<ReturnType<typeof startPrivateCluster>>;
  const schema = randomSchemaName();
  beforeAll(async () => {
    cluster = await startPrivateCluster(3);
  }, 60_000);
  afterAll(async () => {
    await cluster?.remove();
    await dropSchema(schema);
  });

  /** Two replicas on the cluster, 20 messages of 20 sessions through both; what each answered. */
  async function serveTwenty(store: string) {
    const yaml = `server: { host: 127.0.0.1, port: 0 }
store: { kind: redis, cluster: [${cluster.urls.map((url) => `"${url}"`).join(', ')}], ${store} }
audit: { kind: postgres, url: "${POSTGRES_URL}", schema: ${schema} }
pipelines: [{ id: echo, type: echo }]
routing: { default: echo }
`;
    const replicas = await startReplicas(2, yaml);
    for (const replica of replicas) cleanup(() => replica.stop('SIGTERM'));
    const [a, b] = replicas as [(typeof replicas)[0], (typeof replicas)[0]];
    const texts = Array.from({ length: 20 }, (_, index) => `cluster message ${index}`);
    const answers = await Promise.all(
      texts.map((text, index) =>
        post(`${(index % 2 === 0 ? a : b).url}/v1/messages`, {
          session_id: `s-${index}`,
          user_id: 'u1',
          text,
          wait: true,
        }),
      ),
    );
    answers.forEach((answer, index) => {
      expect(answer.status).toBe(200);
      expect(answer.body).toMatchObject({ status: 'completed', replies: [{ text: texts[index] }] });
    });
    const other = await get(`${b.url}/v1/messages/${answers[0]?.body?.id}`);
    expect(other.body).toMatchObject({ status: 'completed', replies: [{ text: texts[0] }] });
    for (const replica of [a, b])
      expect(await get(`${replica.url}/readyz`)).toMatchObject({
        status: 200,
        body: { checks: { store: { ok: true } } },
      });
  }

  it('serves messages on two replicas, each answered where it was sent and readable on the other', {
    timeout: 120_000,
  }, async () => {
    await serveTwenty(`prefix: sb-e2e-${randomUUID()}`);
  });

  it('serves them with the sessions spread over partitions, each partition holding its own', {
    timeout: 120_000,
  }, async () => {
    const prefix = `sb-e2e-${randomUUID()}`;
    await serveTwenty(`prefix: ${prefix}, partitions: 4`);
    // Every accepted message is remembered by its partition for a while: each partition served some.
    const client = new Cluster(
      cluster.urls.map((url) => ({ host: new URL(url).hostname, port: Number(new URL(url).port) })),
    );
    try {
      const remembered = await Promise.all(
        [0, 1, 2, 3].map((index) =>
          client.zcard(`{${index === 0 ? prefix : `${prefix}#${index}`}}:enqueued`),
        ),
      );
      expect(remembered.reduce((sum, count) => sum + count, 0)).toBe(20);
      expect(remembered.filter((count) => count > 0).length).toBeGreaterThan(1);
    } finally {
      client.disconnect();
    }
  });
});
