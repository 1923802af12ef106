import { readFileSync } from 'node:fs';
import { SwitchboardError, packageFolder } from '@switchboard/core';
import type { Database } from 'better-sqlite3';

/**
 * Schema migrations in the order they apply; migration N (1-based) brings the database to
 * `PRAGMA user_version = N`. Append new files here, never edit or reorder applied ones.
 */
export const MIGRATIONS = [
  '0001_init.sql',
  '0002_journal_retry_at.sql',
  '0003_reply_outbox.sql',
  '0004_audit_message_sender.sql',
  '0005_outbox_ended.sql',
  '0006_outbox_head.sql',
  '0007_outbox_head_dropped.sql',
  '0008_seq_without_autoincrement.sql',
  '0009_outbox_ended_by_id.sql',
  '0010_status_version_key_scope.sql',
  '0011_handoffs.sql',
  '0012_audit_tenant.sql',
  '0013_journal_answered.sql',
  '0014_handoff_tenant.sql',
] as const;

/**
 * The schema version this build writes, recorded in the file as `PRAGMA user_version`: the
 * store's data format. It reads that one and migrates any older one up to it.
 */
export const SCHEMA_VERSION = MIGRATIONS.length;
/** `migrations/` beside `src/` and `dist/`, found by the package's name (the gateway bundles it). */
const MIGRATIONS_FOLDER = new URL('migrations/', packageFolder('@switchboard/store-sqlite', import.meta.url));

/** The database's schema version (`PRAGMA user_version`, 0 for a new file). */
export function schemaVersion(db: Database): number {
  return db.pragma('user_version', { simple: true }) as number;
}

/**
 * Applies the migrations `db` has not seen yet, each inside its own transaction together with the
 * `user_version` bump, so a crash leaves the schema at a whole version. The version is read again
 * inside an IMMEDIATE transaction because another process (the server, the CLI) may be migrating
 * the same file at the same moment. Refuses a database written by a newer build.
 */
export function migrate(db: Database, path: string): void {
  assertKnownVersion(db, path);
  for (const [index, file] of MIGRATIONS.entries()) {
    const version = index + 1;
    if (schemaVersion(db) >= version) continue;
    const sql = readFileSync(new URL(file, MIGRATIONS_FOLDER), 'utf8');
    db.transaction(() => {
      if (schemaVersion(db) >= version) return;
      db.exec(sql);
      db.pragma(`user_version = ${version}`);
    }).immediate();
  }
}

/**
 * Throws SB_STORE_FORMAT_UNSUPPORTED when `db` was written by a newer build, whose schema this one
 * cannot read safely.
 */
export function assertKnownVersion(db: Database, path: string): void {
  const version = schemaVersion(db);
  if (version > SCHEMA_VERSION) throw formatUnsupported(path, version, 'upgrade Switchboard');
}

/** The file at `path` records schema `found`, which this build does not read; `fix` says what to do. */
export function formatUnsupported(path: string, found: number, fix: string): SwitchboardError {
  return new SwitchboardError('SB_STORE_FORMAT_UNSUPPORTED', {
    message: `store.path: ${path} has schema version ${found}, this build reads version ${SCHEMA_VERSION}; ${fix}`,
    details: { store: 'sqlite', path, found, reads: SCHEMA_VERSION },
  });
}
