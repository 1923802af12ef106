import { postgresReachable } from '@switchboard/testkit/postgres';
import { redisReachable } from '@switchboard/testkit/redis';
import { describe, expect, it } from 'vitest';
import { startFakePipeline, startGatedPipeline } from './fake-pipeline.js';
import { eventually, get, post, useCleanups } from './serve-process.js';
import { serveOn, sharedStores } from './shared-stores.js';

// A tenant's limits with `store: redis` are the fleet's, not each replica's: three `switchboard
// serve` on one pool hold tenant acme's `concurrency`, `max_pending` and quotas together, while
// the default tenant is still served.

const cleanup = useCleanups();
const reachable = (await redisReachable()) && (await postgresReachable());

/** Tenant acme on `backendUrl`, with `limits` (YAML lines of the tenant entry, indented 4). */
const acme = (backendUrl: string, limits: string) =>
  `tenants:\n  - id: acme\n${limits}` +
  '    channels: [ { id: acme-api, type: openapi, prefix: /acme } ]\n' +
  `    pipelines: [ { id: acme-bot, type: http, url: "${backendUrl}" } ]\n` +
  '    routing: { default: acme-bot }\n';

async function threeReplicas(extra: string) {
  const stores = sharedStores(cleanup);
  const replicas = [];
  for (let index = 0; index < 3; index += 1) replicas.push(await serveOn(cleanup, stores, extra));
  return replicas;
}

describe.skipIf(!reachable)('tenants on a fleet of three replicas (end to end)', () => {
  it('runs no more of a tenant’s turns at once than its concurrency and refuses its excess, fleet-wide', async () => {
    const backend = await startGatedPipeline();
    const { release } = backend;
    cleanup(async () => {
      release();
      await backend.close();
    });
    const replicas = await threeReplicas(acme(backend.url, '    concurrency: 2\n    max_pending: 4\n'));
    const send = (index: number) =>
      post(`${replicas[index % 3]?.url}/acme/messages`, {
        session_id: `s${index}`,
        user_id: `u${index}`,
        text: `m${index}`,
        wait: false,
      });
    // Two run (one replica alone would run both), four wait: six accepted across the replicas.
    const accepted = [];
    for (let index = 0; index < 6; index += 1) {
      accepted.push((await send(index)).status);
      if (index === 1)
        await eventually(() => backend.requests.length === 2, 10_000, 'two turns at the backend');
    }
    expect(accepted).toEqual([202, 202, 202, 202, 202, 202]);
    for (let index = 6; index < 9; index += 1) {
      const refused = await send(index);
      expect(refused.status).toBe(429);
      expect(refused.body?.error?.code).toBe('SB_QUEUE_FULL');
    }
    // Every replica still serves the default tenant while acme's turns hold their slots.
    for (const replica of replicas) {
      const answer = await post(`${replica.url}/v1/messages`, { session_id: 'd', user_id: 'd', text: 'hi' });
      expect(answer.body).toMatchObject({ status: 'completed', replies: [{ text: 'hi' }] });
    }
    expect(backend.requests).toHaveLength(2);

    release();
    await eventually(() => backend.requests.length === 6, 20_000, 'every accepted turn at the backend');
    expect(backend.maxConcurrent).toBe(2);
  });

  it('lets a sender and the tenant through no more than their quotas across the replicas', async () => {
    const backend = await startFakePipeline();
    cleanup(() => backend.close());
    const replicas = await threeReplicas(
      acme(
        backend.url,
        '    quotas:\n      - { scope: sender, limit: 3, per: 1h }\n      - { scope: tenant, limit: 7, per: 1h }\n',
      ),
    );
    const send = (index: number, user: string) =>
      post(`${replicas[index % 3]?.url}/acme/messages`, {
        session_id: `${user}-${index}`,
        user_id: user,
        text: `m${index}`,
        wait: false,
      });
    // Sender u1: three tokens for the fleet, whichever replica each message reaches.
    const first = [];
    for (let index = 0; index < 6; index += 1) first.push((await send(index, 'u1')).status);
    expect(first.filter((status) => status === 202)).toHaveLength(3);
    expect(first.filter((status) => status === 429)).toHaveLength(3);
    // The tenant's seven: u1's three, then four of eight from senders of their own.
    const others = [];
    for (let index = 0; index < 8; index += 1) others.push(await send(index, `v${index}`));
    expect(others.filter((answer) => answer.status === 202)).toHaveLength(4);
    const refused = others.filter((answer) => answer.status === 429);
    expect(refused).toHaveLength(4);
    expect(refused.every((answer) => answer.body?.error?.code === 'SB_QUOTA_EXCEEDED')).toBe(true);

    await eventually(() => backend.requests.length === 7, 20_000, 'the seven accepted turns at the backend');
    const dropped = await eventually(async () => {
      const page = await get(`${replicas[0]?.url}/admin/audit?outcome=dropped&reason=quota&limit=50`);
      return page.body?.items.length === 7 && page.body.items;
    });
    expect(dropped.every((item: { tenant: string }) => item.tenant === 'acme')).toBe(true);
  });
});
