import { type Config, DEFAULT_SQLITE_PATH } from '@switchboard/config';
import {
  type AuditLog,
  type HistoryStore,
  type Logger,
  type MessageStatusStore,
  type PipelinePolicy,
  type QueryPool,
  SwitchboardError,
  createMemoryAuditLog,
  createMemoryHistoryStore,
  createMemoryMessageStatusStore,
  createMemoryQueryPool,
} from '@switchboard/core';
import { type RedisQueryPool, createRedisQueryPool } from '@switchboard/store-redis';
import { type SqliteStore, createSqliteStore } from '@switchboard/store-sqlite';

/** What every query pool is built from, whichever store holds it. */
export interface PoolOptions {
  concurrency: Config['concurrency'];
  limits: Config['queue'];
  /** Whole policies: a shared store also checks that replicas agree on retry and timeout. */
  pipelines: readonly PipelinePolicy[];
  logger: Logger;
}

/** A store's answer to the readiness probe. */
export interface StoreHealth {
  ok: boolean;
  /** Why not, when not. */
  detail?: string;
}

/** The stores the gateway runs on, opened from `store:` and `audit:`. */
export interface Stores {
  /** Builds the query pool on the configured store (docs/design.md §2 "Query pool", §5). */
  createPool(options: PoolOptions): Promise<QueryPool>;
  auditLog: AuditLog;
  statuses: MessageStatusStore;
  history: HistoryStore;
  /** Whether the stores answer (for /readyz). */
  health(): Promise<StoreHealth>;
  /** Closes files and connections; the pool must be drained first. */
  close(): Promise<void>;
}

/** Ready when a read from the SQLite file succeeds. */
function sqliteHealth(statuses: MessageStatusStore): Promise<StoreHealth> {
  return statuses.get('readiness-probe').then(
    () => ({ ok: true }),
    (err: unknown) => ({ ok: false, detail: err instanceof Error ? err.message : String(err) }),
  );
}

/**
 * Opens the configured stores. `sqlite` keeps everything in one file (or the audit log,
 * statuses and history in `audit.path`); `redis` keeps the pool in Redis and the rest in SQLite;
 * `memory` keeps everything in the process (tests, benchmarks) — the audit log included, since
 * there is no file to put it in.
 */
export function openStores(config: Config): Stores {
  if (config.audit.kind === 'postgres') {
    throw new SwitchboardError('SB_CONFIG_INVALID', {
      message: 'audit.kind: "postgres" is not available in this version yet (use sqlite)',
    });
  }
  if (config.store.kind === 'memory') {
    return {
      createPool: async (options) => createMemoryQueryPool(options),
      auditLog: createMemoryAuditLog(),
      statuses: createMemoryMessageStatusStore(),
      history: createMemoryHistoryStore(),
      health: async () => ({ ok: true }),
      close: async () => {},
    };
  }
  // The audit log, statuses and history go to `audit.path`, by default the store's own file.
  const storePath = config.store.kind === 'sqlite' ? config.store.path : undefined;
  const localPath = config.audit.path ?? storePath ?? DEFAULT_SQLITE_PATH;
  const local = createSqliteStore({ path: localPath });
  if (storePath === undefined) return redisStores(config.store as RedisStoreConfig, local);
  const journalStore = storePath === localPath ? local : createSqliteStore({ path: storePath });
  return {
    createPool: async (options) => createMemoryQueryPool({ ...options, journal: journalStore.journal }),
    auditLog: local.auditLog,
    statuses: local.statuses,
    history: local.history,
    health: () => sqliteHealth(local.statuses),
    close: async () => {
      local.close();
      if (journalStore !== local) journalStore.close();
    },
  };
}

type RedisStoreConfig = Extract<Config['store'], { kind: 'redis' }>;

/**
 * The pool in Redis, shared by every replica with the same `store.prefix` (docs/design.md §5);
 * the audit log, statuses and history in this replica's SQLite file.
 */
function redisStores(store: RedisStoreConfig, local: SqliteStore): Stores {
  let pool: RedisQueryPool | undefined;
  return {
    auditLog: local.auditLog,
    statuses: local.statuses,
    history: local.history,
    async createPool(options) {
      pool = await createRedisQueryPool({ url: store.url, prefix: store.prefix, ...options });
      return pool;
    },
    async health() {
      const [redis, sqlite] = await Promise.all([
        pool?.health() ?? { ok: false, detail: 'the pool is not connected yet' },
        sqliteHealth(local.statuses),
      ]);
      return redis.ok ? sqlite : redis;
    },
    async close() {
      await pool?.shutdown();
      local.close();
    },
  };
}
