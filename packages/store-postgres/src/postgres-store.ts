import type { AuditLog, HistoryStore, Logger, MessageStatusStore } from '@switchboard/core';
import { SwitchboardError, silentLogger } from '@switchboard/core';
import { Pool, escapeIdentifier } from 'pg';
import { migrate } from './migrations.js';
import { createPostgresAuditLog } from './postgres-audit-log.js';
import { createSql } from './postgres-connection.js';
import { createPostgresHistoryStore } from './postgres-history-store.js';
import { createPostgresMessageStatusStore } from './postgres-message-status-store.js';

/** Options of `createPostgresStore`: exactly one of `url` and `pool`. */
export interface PostgresStoreOptions {
  /** Connection string (`postgres://user:password@host:5432/database`); the store opens and owns a pool. */
  url?: string;
  /**
   * A pool the caller owns instead of `url`; `close()` leaves it open. It brings its own
   * timeouts: `queryTimeoutMs` does not apply to it, and without `query_timeout` and
   * `lock_timeout` a statement waiting on a row lock holds up the
   * status puts (or audit appends) issued after it for as long as the lock is held.
   */
  pool?: Pool;
  /**
   * The schema holding the tables, created when missing (1–63 characters of a–z, 0–9 and _, not
   * starting with a digit). Default `switchboard`.
   */
  schema?: string;
  /** Clock for TTLs and expiry, ms since the epoch. Default `Date.now`. */
  now?: () => number;
  /** History entries kept per session and pipeline; older ones are deleted. Default 1000. */
  historyMaxEntries?: number;
  /** Connections of the pool opened for `url`. Default 10. */
  maxConnections?: number;
  /** How long opening a connection may take before the call fails, in ms. Default 5000. */
  connectTimeoutMs?: number;
  /**
   * How long one statement may wait for its answer before the call fails, in ms. Default 10000.
   * The server gives up waiting for a row lock (`lock_timeout`) at 90% of it; 0: no timeout.
   */
  queryTimeoutMs?: number;
  /** Where failures of idle connections are logged (`{ component: 'store.postgres' }`). */
  logger?: Logger;
}

const DEFAULTS = {
  schema: 'switchboard',
  now: Date.now,
  historyMaxEntries: 1000,
  maxConnections: 10,
  connectTimeoutMs: 5000,
  queryTimeoutMs: 10_000,
  logger: silentLogger,
} satisfies Required<Omit<PostgresStoreOptions, 'url' | 'pool'>>;

/** A name PostgreSQL keeps whole (63 bytes at most) and that needs no quoting in tools. */
const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/** The audit log, message statuses and history over one PostgreSQL schema. */
export interface PostgresStore {
  auditLog: AuditLog;
  statuses: MessageStatusStore;
  history: HistoryStore;
  /** Ends the pool opened for `url` (a given pool stays open); the stores must not be used afterwards. */
  close(): Promise<void>;
}

/** `host:port/database` of a connection string, without credentials, for error messages. */
function targetOf(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.hostname}:${parsed.port || '5432'}${parsed.pathname}`;
  } catch {
    return 'the configured URL';
  }
}

/** The pool to use and whether the store owns it; refuses anything but exactly one of url and pool. */
function poolOf(options: PostgresStoreOptions, logger: Logger): { pool: Pool; owned: boolean } {
  if (options.pool !== undefined && options.url === undefined) return { pool: options.pool, owned: false };
  if (options.url === undefined || options.pool !== undefined) {
    throw new SwitchboardError('SB_CONFIG_INVALID', {
      message: 'postgres: give exactly one of url and pool',
      details: { field: 'url' },
    });
  }
  const queryTimeoutMs = options.queryTimeoutMs ?? DEFAULTS.queryTimeoutMs;
  const pool = new Pool({
    connectionString: options.url,
    max: options.maxConnections ?? DEFAULTS.maxConnections,
    connectionTimeoutMillis: options.connectTimeoutMs ?? DEFAULTS.connectTimeoutMs,
    query_timeout: queryTimeoutMs,
    // A statement waiting for a row lock gives up on the server too, just before the client
    // does, rather than wait on behind its back (and hold up the writes batched after it). Not
    // `statement_timeout`: a long prune must still finish. A startup parameter: a pooler in
    // between must pass it (PgBouncer's `ignore_startup_parameters`).
    ...(queryTimeoutMs > 0 ? { lock_timeout: Math.max(1, Math.floor(queryTimeoutMs * 0.9)) } : {}),
    keepAlive: true,
  });
  // An idle connection the server drops emits here; unhandled, it would end the process. The
  // pool replaces it on next use, and a call that cannot connect fails with SB_STORE_UNAVAILABLE.
  pool.on('error', (err) => logger.warn({ err }, 'idle postgresql connection failed'));
  return { pool, owned: true };
}

/**
 * The shared store of several replicas (docs/design.md §5 "Several replicas"): audit log, message
 * statuses with idempotency keys, and history in one PostgreSQL schema, migrated on open (once,
 * whichever replica starts first). Every call is one statement or one short transaction on the
 * pool; status puts and audit appends issued together share one statement per table. A database out of reach fails calls with SB_STORE_UNAVAILABLE (retryable), within
 * `connectTimeoutMs` or `queryTimeoutMs`; the pool reconnects by itself when it returns.
 */
export async function createPostgresStore(options: PostgresStoreOptions): Promise<PostgresStore> {
  const schema = options.schema ?? DEFAULTS.schema;
  if (!SCHEMA_NAME.test(schema)) {
    throw new SwitchboardError('SB_CONFIG_INVALID', {
      message: `postgres.schema: "${schema}" is not 1–63 characters of a–z, 0–9 and _ (not starting with a digit)`,
      details: { field: 'schema' },
    });
  }
  const logger = (options.logger ?? DEFAULTS.logger).child({ component: 'store.postgres' });
  const { pool, owned } = poolOf(options, logger);
  const sql = createSql(pool, options.url === undefined ? `schema ${schema}` : targetOf(options.url));
  const close = async () => {
    if (owned) await pool.end();
  };
  try {
    await migrate(sql, schema);
  } catch (error) {
    await close();
    throw error;
  }
  const schemaName = escapeIdentifier(schema);
  const now = options.now ?? DEFAULTS.now;
  return {
    auditLog: createPostgresAuditLog(sql, schemaName),
    statuses: createPostgresMessageStatusStore(sql, schemaName, now),
    history: createPostgresHistoryStore(
      sql,
      schemaName,
      options.historyMaxEntries ?? DEFAULTS.historyMaxEntries,
    ),
    close,
  };
}
