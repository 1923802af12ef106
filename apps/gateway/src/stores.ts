import type { Config } from '@switchboard/config';
import {
  type AuditLog,
  type HistoryStore,
  type Journal,
  type MessageStatusStore,
  SwitchboardError,
  createMemoryAuditLog,
  createMemoryHistoryStore,
  createMemoryMessageStatusStore,
} from '@switchboard/core';
import { createSqliteStore } from '@switchboard/store-sqlite';

/** The stores the gateway runs on, opened from `store:` and `audit:`. */
export interface Stores {
  /** Absent with `store: memory`: nothing survives a restart. */
  journal: Journal | undefined;
  auditLog: AuditLog;
  statuses: MessageStatusStore;
  history: HistoryStore;
  /** Resolves true when the store answers (for /readyz). */
  ping(): Promise<boolean>;
  close(): Promise<void>;
}

/**
 * Opens the configured stores. `sqlite` keeps everything in one file; `memory` keeps everything
 * in the process (tests, benchmarks) — the audit log included, since there is no file to put it
 * in. `redis` and `postgres` arrive with the replicas work and are refused with the config path.
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
      journal: undefined,
      auditLog: createMemoryAuditLog(),
      statuses: createMemoryMessageStatusStore(),
      history: createMemoryHistoryStore(),
      ping: async () => true,
      close: async () => {},
    };
  }
  const sqlite = createSqliteStore({ path: config.store.path });
  return {
    journal: sqlite.journal,
    auditLog: sqlite.auditLog,
    statuses: sqlite.statuses,
    history: sqlite.history,
    ping: () =>
      sqlite.statuses.get('readiness-probe').then(
        () => true,
        () => false,
      ),
    close: async () => sqlite.close(),
  };
}
