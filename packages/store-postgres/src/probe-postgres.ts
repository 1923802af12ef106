import type { ProbeResult } from '@switchboard/core';
import { Client, escapeIdentifier } from 'pg';
import { loadMigrations } from './migrations.js';

/** Options of `probePostgresStore`. */
export interface PostgresProbeOptions {
  /** `audit.url`; it may hold a password, which no result shows. */
  url: string;
  /** `audit.schema`. */
  schema: string;
  /** How long connecting and each statement may take, in ms. */
  timeoutMs: number;
}

/** `host:port/database` of a connection string, without credentials. */
function targetOf(url: string): string {
  const parsed = new URL(url);
  return `${parsed.hostname}:${parsed.port || '5432'}${parsed.pathname}`;
}

/** The schema's version as `schema_migrations` records it; 0 when the table is not there yet. */
async function schemaVersion(client: Client, schema: string): Promise<number> {
  const table = await client.query('SELECT to_regclass($1) AS name', [
    `${escapeIdentifier(schema)}.schema_migrations`,
  ]);
  if (table.rows[0]?.name === null) return 0;
  const applied = await client.query<{ version: number | null }>(
    `SELECT max(version) AS version FROM ${escapeIdentifier(schema)}.schema_migrations`,
  );
  return applied.rows[0]?.version ?? 0;
}

/**
 * The read-only check of `audit: postgres` (`switchboard doctor`): connects, then, in a
 * transaction rolled back at the end, does what a start does in the schema: creates it when
 * missing, creates a table, writes and reads a row. Nothing stays. Fails too when the schema's
 * version is newer than this build reads (a start would refuse it).
 */
export async function probePostgresStore(options: PostgresProbeOptions): Promise<ProbeResult> {
  const target = targetOf(options.url);
  const schemaName = escapeIdentifier(options.schema);
  const client = new Client({
    connectionString: options.url,
    connectionTimeoutMillis: options.timeoutMs,
    query_timeout: options.timeoutMs,
  });
  client.on('error', () => {});
  try {
    await client.connect();
  } catch (error) {
    return {
      level: 'fail',
      detail: `unreachable: ${error instanceof Error ? error.message || error.name : String(error)} (${target})`,
      hint: 'start PostgreSQL, or fix audit.url (host, port, database, user, password)',
    };
  }
  try {
    await client.query('BEGIN');
    const existing = await client.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [options.schema]);
    if (existing.rowCount === 0) await client.query(`CREATE SCHEMA ${schemaName}`);
    const version = await schemaVersion(client, options.schema);
    await client.query(`CREATE TABLE ${schemaName}.doctor_probe (value TEXT NOT NULL)`);
    await client.query(`INSERT INTO ${schemaName}.doctor_probe (value) VALUES ('probe')`);
    const read = await client.query(`SELECT value FROM ${schemaName}.doctor_probe`);
    if (read.rows[0]?.value !== 'probe') throw new Error('a row written was not read back');
    const reads = (await loadMigrations()).length;
    if (version > reads) {
      return {
        level: 'fail',
        detail: `schema ${options.schema} at ${target} has version ${version}, this build reads version ${reads}`,
        hint: 'upgrade Switchboard, or point audit.schema at a schema of this version',
      };
    }
    const state =
      existing.rowCount === 0
        ? 'to be created at start'
        : version < reads
          ? `version ${version}, migrated to ${reads} at start`
          : `version ${version}`;
    return {
      level: 'ok',
      detail: `${target}, schema ${options.schema} (${state}): creates, writes and reads`,
    };
  } catch (error) {
    return {
      level: 'fail',
      detail: `schema ${options.schema} at ${target}: ${error instanceof Error ? error.message : String(error)}`,
      hint: `grant the user CREATE on schema ${options.schema} (or on the database, for a schema still to be created)`,
    };
  } finally {
    await client.query('ROLLBACK').catch(() => {});
    await client.end().catch(() => {});
  }
}
