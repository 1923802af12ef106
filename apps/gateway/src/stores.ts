import { type Config, DEFAULT_SQLITE_PATH } from '@switchboard/config';
import {
  type AuditLog,
  type HistoryStore,
  type Logger,
  type MessageStatusStore,
  type PoolPipelinePolicy,
  type QueryPool,
  SwitchboardError,
  createMemoryAuditLog,
  createMemoryHistoryStore,
  createMemoryMessageStatusStore,
  createMemoryQueryPool,
} from '@switchboard/core';
import { createSqliteStore } from '@switchboard/store-sqlite';

/** What every query pool is built from, whichever store holds it. */
export interface PoolOptions {
  concurrency: Config['concurrency'];
  limits: Config['queue'];
  pipelines: readonly PoolPipelinePolicy[];
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
 * statuses and history in `audit.path`); `memory` keeps everything in the process (tests,
 * benchmarks) — the audit log included, since there is no file to put it in.
 */
export function openStores(config: Config): Stores {
  if (config.store.kind === 'redis') {
    throw new SwitchboardError('SB_CONFIG_INVALID', {
      message: 'store.kind: "redis" is not available in this version yet (use sqlite or memory)',
    });
  }
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
  const localPath =
    config.audit.path ?? (config.store.kind === 'sqlite' ? config.store.path : DEFAULT_SQLITE_PATH);
  const local = createSqliteStore({ path: localPath });
  const journalStore =
    config.store.path === localPath ? local : createSqliteStore({ path: config.store.path });
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
