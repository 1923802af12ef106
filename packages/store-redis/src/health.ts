import { type RedisClient, primaryOf } from './redis-connection.js';

/** Whether the shared store can serve the pool, and if not, why (the gateway's `/readyz` shape). */
export interface StoreHealth {
  ok: boolean;
  /** Why not, when not. */
  detail?: string;
}

/** How long since a replica's last acknowledgement (it sends one a second) it still counts in sync, s. */
const IN_SYNC_LAG_S = 2;

/** The replicas of `INFO replication` online and acknowledging (`slaveN:…,state=online,…,lag=N`). */
function replicasInSync(info: string): number {
  let count = 0;
  for (const [, state, lag] of info.matchAll(/^slave\d+:.*state=(\w+),.*lag=(\d+)/gm))
    if (state === 'online' && Number(lag) <= IN_SYNC_LAG_S) count += 1;
  return count;
}

/**
 * Redis answers PING and evicts nothing (docs/design.md §5): under any `maxmemory-policy` but
 * `noeviction`, a full Redis would silently drop queued messages or leases instead of refusing
 * writes. With `waitReplicas`, also that many replicas acknowledge: with fewer, every write fails.
 */
export async function checkRedisHealth(
  client: RedisClient,
  prefix: string,
  waitReplicas = 0,
): Promise<StoreHealth> {
  try {
    const primary = primaryOf(client, prefix);
    await primary.ping();
    const info = await primary.info('memory');
    const policy = /^maxmemory_policy:(\S+)/m.exec(info)?.[1];
    if (policy !== 'noeviction') {
      return {
        ok: false,
        detail: `redis maxmemory-policy is ${policy ?? 'unknown'}: set it to noeviction, or queued messages may be evicted`,
      };
    }
    if (waitReplicas > 0) {
      const inSync = replicasInSync(await primary.info('replication'));
      if (inSync < waitReplicas)
        return {
          ok: false,
          detail: `redis has ${inSync} replicas in sync, store.wait_replicas asks for ${waitReplicas}: writes are refused`,
        };
    }
    return { ok: true };
  } catch (err) {
    return { ok: false, detail: `redis is unreachable: ${err instanceof Error ? err.message : String(err)}` };
  }
}
