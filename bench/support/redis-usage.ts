import { Redis } from 'ioredis';
import { commandStats } from './redis-commandstats.js';

/** What the nodes of one Redis (a server, or a cluster's primaries) have spent so far. */
export interface RedisUsage {
  /** Each node's CPU time, ms, in the order of the nodes asked. */
  cpuMs: number[];
  /** `calls` of every command, summed over the nodes. */
  calls: Map<string, number>;
}

/** A plain connection to one Redis node, for `CONFIG SET` and `INFO`. */
export async function connectAdmin(url: string): Promise<Redis> {
  const admin = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0 });
  admin.on('error', () => {});
  await admin.connect();
  return admin;
}

/** Redis' own CPU time so far, ms (`INFO cpu`: used_cpu_sys + used_cpu_user, in seconds). */
async function redisCpuMs(admin: Redis): Promise<number> {
  const info = await admin.info('cpu');
  const seconds = (name: string) =>
    Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(info)?.[1] ?? Number.NaN);
  return (seconds('used_cpu_sys') + seconds('used_cpu_user')) * 1000;
}

/**
 * Reads every node's `INFO cpu` and `INFO commandstats`, one connection per node: a cluster node
 * answers `INFO` for itself only, so a cluster's figures are the sum of its nodes'.
 */
export async function redisUsage(nodes: readonly Redis[]): Promise<RedisUsage> {
  const readings = await Promise.all(
    nodes.map(async (node) => ({ calls: (await commandStats(node)).calls, cpuMs: await redisCpuMs(node) })),
  );
  const calls = new Map<string, number>();
  for (const reading of readings)
    for (const [command, count] of reading.calls) calls.set(command, (calls.get(command) ?? 0) + count);
  return { cpuMs: readings.map((reading) => reading.cpuMs), calls };
}
