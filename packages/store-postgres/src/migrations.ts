import { readFile, readdir } from 'node:fs/promises';
import { SwitchboardError, packageFolder } from '@switchboard/core';
import { escapeIdentifier } from 'pg';
import type { Sql } from './postgres-connection.js';

/** `migrations/` beside `src/` and `dist/`, found by the package's name (the gateway bundles it). */
const MIGRATIONS_FOLDER = new URL(
  'migrations/',
  packageFolder('@switchboard/store-postgres', import.meta.url),
);
/** `0001_init.sql`: a four-digit version, then what the migration does. */
const MIGRATION_FILE = /^(\d{4})_[a-z0-9_]+\.sql$/;

/** One numbered file of `migrations/`. */
export interface Migration {
  version: number;
  name: string;
  sql: string;
}

let loaded: Promise<Migration[]> | undefined;

/**
 * The migrations in the order they apply, read once per process. Their versions run 1, 2, 3…
 * without gaps; append new files, never edit or renumber applied ones.
 */
export function loadMigrations(): Promise<Migration[]> {
  loaded ??= (async () => {
    const files = (await readdir(MIGRATIONS_FOLDER)).filter((file) => MIGRATION_FILE.test(file)).sort();
    const migrations = await Promise.all(
      files.map(async (name) => ({
        version: Number(MIGRATION_FILE.exec(name)?.[1]),
        name,
        sql: await readFile(new URL(name, MIGRATIONS_FOLDER), 'utf8'),
      })),
    );
    for (const [index, migration] of migrations.entries()) {
      if (migration.version !== index + 1) {
        throw new Error(`migrations/${migration.name}: expected version ${index + 1}, numbers must not skip`);
      }
    }
    return migrations;
  })();
  return loaded;
}

/**
 * Brings `schema` to the newest migration and returns the versions this call applied (empty when
 * another process got there first). Everything runs in one transaction under an advisory lock
 * keyed by the schema name, so replicas starting together queue on the lock: the first applies
 * the migrations and records them in `schema_migrations`, the others then find nothing to do. A
 * crash leaves the schema at its previous version. The latest version recorded is the schema's
 * data format: one newer than this build's migrations is refused (SB_STORE_FORMAT_UNSUPPORTED).
 */
export async function migrate(sql: Sql, schema: string): Promise<number[]> {
  const migrations = await loadMigrations();
  const schemaName = escapeIdentifier(schema);
  return sql.transaction(async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`switchboard.migrate:${schema}`]);
    // Created only when missing: CREATE SCHEMA IF NOT EXISTS needs the CREATE privilege on the
    // database even when the schema exists already.
    const existing = await tx.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema]);
    if (existing.rowCount === 0) await tx.query(`CREATE SCHEMA ${schemaName}`);
    await tx.query(
      `CREATE TABLE IF NOT EXISTS ${schemaName}.schema_migrations (
         version INTEGER PRIMARY KEY,
         name TEXT NOT NULL,
         applied_at TIMESTAMPTZ NOT NULL DEFAULT now())`,
    );
    const applied = await tx.query<{ version: number }>(
      `SELECT version FROM ${schemaName}.schema_migrations ORDER BY version`,
    );
    const current = applied.rows.at(-1)?.version ?? 0;
    if (current > migrations.length) {
      throw new SwitchboardError('SB_STORE_FORMAT_UNSUPPORTED', {
        message: `PostgreSQL schema ${schema} has version ${current}, this build reads version ${migrations.length}; upgrade Switchboard`,
        details: { store: 'postgres', schema, found: current, reads: migrations.length },
      });
    }
    const pending = migrations.slice(current);
    // The files name tables without a schema; SET LOCAL ends with this transaction.
    if (pending.length > 0) await tx.query(`SET LOCAL search_path TO ${schemaName}`);
    for (const migration of pending) {
      await tx.query(migration.sql);
      await tx.query(`INSERT INTO ${schemaName}.schema_migrations (version, name) VALUES ($1, $2)`, [
        migration.version,
        migration.name,
      ]);
    }
    return pending.map((migration) => migration.version);
  });
}
