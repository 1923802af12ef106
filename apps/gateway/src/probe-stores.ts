import { type Config, DEFAULT_SQLITE_PATH } from '@switchboard/config';
import type { ProbeResult } from '@switchboard/core';

/** One check, named as `switchboard doctor` lists it: `channels.tg`, `store.redis.eviction`. */
export type NamedCheck = { name: string } & ProbeResult;

/** Options of `probeStores`. */
export interface StoreProbeOptions {
  /** How long connecting and each command may take, in ms. */
  timeoutMs: number;
  /** The most Redis' clock may differ from this host's, in ms. */
  maxClockSkewMs: number;
}

/** The SQLite file of `audit:`, when it is not the store's own file (which is checked as the store). */
function separateAuditFile(config: Config): string | undefined {
  const { audit, store } = config;
  if (audit.kind !== 'sqlite' || store.kind === 'redis') return undefined;
  if (store.kind === 'sqlite')
    return audit.path !== undefined && audit.path !== store.path ? audit.path : undefined;
  return audit.path ?? DEFAULT_SQLITE_PATH;
}

/** What the Redis probe found, one check per aspect; only the connection when it failed. */
/** Each node of a cluster is checked as a Redis of its own: eviction and persistence are per node. */
async function redisChecks(urls: readonly string[], options: StoreProbeOptions): Promise<NamedCheck[]> {
  const { probeRedisStore } = await import('@switchboard/store-redis');
  const probes = await Promise.all(urls.map((url) => probeRedisStore({ url, ...options })));
  return probes.flatMap(({ connection, ...aspects }) => [
    { name: 'store.redis', ...connection },
    ...Object.entries(aspects).map(([aspect, result]) => ({ name: `store.redis.${aspect}`, ...result })),
  ]);
}

async function sqliteCheck(name: string, path: string, configPath: string): Promise<NamedCheck[]> {
  const { probeSqliteFile } = await import('@switchboard/store-sqlite');
  return [{ name, ...(await probeSqliteFile(path, configPath)) }];
}

async function postgresCheck(url: string, schema: string, timeoutMs: number): Promise<NamedCheck[]> {
  const { probePostgresStore } = await import('@switchboard/store-postgres');
  return [{ name: 'audit.postgres', ...(await probePostgresStore({ url, schema, timeoutMs })) }];
}

/**
 * The read-only checks of `store:` and `audit:` (`switchboard doctor`), run at once, each by its
 * store package, imported only when the config names it (as `openStores` does): the SQLite
 * file, or Redis (connection, eviction policy, persistence, clock), and PostgreSQL for the
 * audit log.
 */
export async function probeStores(config: Config, options: StoreProbeOptions): Promise<NamedCheck[]> {
  const { store, audit } = config;
  const auditFile = separateAuditFile(config);
  const checks = await Promise.all([
    store.kind === 'memory'
      ? [
          {
            name: 'store.memory',
            level: 'ok' as const,
            detail: 'in memory: queued messages do not survive a restart',
          },
        ]
      : [],
    store.kind === 'sqlite' ? sqliteCheck('store.sqlite', store.path, 'store.path') : [],
    store.kind === 'redis' ? redisChecks(store.cluster ?? [store.url as string], options) : [],
    auditFile === undefined ? [] : sqliteCheck('audit.sqlite', auditFile, 'audit.path'),
    audit.kind === 'postgres' ? postgresCheck(audit.url, audit.schema, options.timeoutMs) : [],
  ]);
  return checks.flat();
}
