import { postgresReachable } from '@switchboard/testkit/postgres';
import { redisReachable } from '@switchboard/testkit/redis';
import { describe, expect, it } from 'vitest';
import { eventually, get, post, useCleanups } from './serve-process.js';
import { serveOn, sharedStores } from './shared-stores.js';

// A quota with `store: redis` is the deployment's, not each replica's: two `switchboard serve`
// on one pool share the top-level quota (the tenant `default`'s) bucket for bucket.

const cleanup = useCleanups();
const reachable = (await redisReachable()) && (await postgresReachable());

describe.skipIf(!reachable)('quotas on a shared pool (end to end)', () => {
  it('lets the replicas together through no more than the quota, and audits the rest dropped/quota', async () => {
    const stores = sharedStores(cleanup);
    const quota = 'quotas: [ { scope: tenant, limit: 6, per: 1h } ]\n';
    const a = await serveOn(cleanup, stores, quota);
    const b = await serveOn(cleanup, stores, quota);
    const statuses: number[] = [];
    for (let index = 0; index < 10; index += 1) {
      const replica = index % 2 === 0 ? a : b;
      const answer = await post(`${replica.url}/v1/messages`, {
        session_id: `s${index}`,
        user_id: `u${index}`,
        text: `m${index}`,
        wait: false,
      });
      statuses.push(answer.status);
      if (answer.status === 429) expect(answer.body?.error?.code).toBe('SB_QUOTA_EXCEEDED');
    }
    // Six tokens for the deployment: each replica alone would have let all ten through.
    expect(statuses.filter((status) => status === 202 || status === 200)).toHaveLength(6);
    expect(statuses.filter((status) => status === 429)).toHaveLength(4);
    const dropped = await eventually(async () => {
      const page = await get(`${a.url}/admin/audit?outcome=dropped&reason=quota`);
      return page.body?.items.length === 4 && page.body.items;
    });
    expect(dropped.every((item: { tenant: string }) => item.tenant === 'default')).toBe(true);
  });
});
