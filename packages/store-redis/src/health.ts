import type { Redis } from 'ioredis';

/** Whether the shared store can serve the pool, and if not, why (the gateway's `/readyz` shape). */
export interface StoreHealth {
  ok: boolean;
  /** Why not, when not. */
  detail?: string;
}

/**
 * Redis answers PING and evicts nothing (docs/design.md §5): under any `maxmemory-policy` but
 * `noeviction`, a full Redis would silently drop queued messages or leases instead of refusing
 * writes.
 */
export async function checkRedisHealth(client: Redis): Promise<StoreHealth> {
  try {
    await client.ping();
    const info = await client.info('memory');
    const policy = /^maxmemory_policy:(\S+)/m.exec(info)?.[1];
    if (policy !== 'noeviction') {
      return {
        ok: false,
        detail: `redis maxmemory-policy is ${policy ?? 'unknown'}: set it to noeviction, or queued messages may be evicted`,
      };
    }
    return { ok: true };
  } catch (err) {
    return { ok: false, detail: `redis is unreachable: ${err instanceof Error ? err.message : String(err)}` };
  }
}
