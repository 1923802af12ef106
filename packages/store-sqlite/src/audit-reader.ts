import { SCHEMA_VERSION, formatUnsupported, schemaVersion } from './migrations.js';
import { type AuditReader, createSqliteAuditReader } from './sqlite-audit-log.js';
import { openDatabase } from './sqlite-store.js';

/** Options of `openAuditReader`. */
export interface AuditReaderOptions {
  /** The database file the server writes (`store.path`). */
  path: string;
  /** How long a read waits for a lock, in ms. Default 5000. */
  busyTimeoutMs?: number;
}

/** A read-only view of a store's audit log. */
export interface SqliteAuditReader {
  auditLog: AuditReader;
  close(): void;
}

const DEFAULT_BUSY_TIMEOUT_MS = 5000;

/**
 * Opens the audit log of an existing store read-only, for `switchboard audit`. It is safe while a
 * server is writing the same file: in WAL mode a reader sees the last committed records and never
 * blocks the writer. It never migrates or creates anything, so it refuses a missing file and a
 * schema other than the one this build writes (start the server of this version once to migrate).
 */
export function openAuditReader(options: AuditReaderOptions): SqliteAuditReader {
  const db = openDatabase(options.path, options.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS, true);
  const version = schemaVersion(db);
  if (version !== SCHEMA_VERSION) {
    db.close();
    const fix = version > SCHEMA_VERSION ? 'upgrade Switchboard' : 'start the server once to migrate it';
    throw formatUnsupported(options.path, version, fix);
  }
  return { auditLog: createSqliteAuditReader(db), close: () => db.close() };
}
