import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { freePort } from './free-port.js';

/** The PostgreSQL the tests run against; every test keeps to a schema of its own. */
export const POSTGRES_URL =
  process.env.SWITCHBOARD_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/** Probes give up quickly instead of waiting on a database that is away. */
const PROBE_TIMEOUT_MS = 2000;

async function withClient<Result>(work: (client: Client) => Promise<Result>): Promise<Result> {
  const client = new Client({
    connectionString: POSTGRES_URL,
    connectionTimeoutMillis: PROBE_TIMEOUT_MS,
    query_timeout: PROBE_TIMEOUT_MS,
  });
  client.on('error', () => {});
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/**
 * Whether the shared PostgreSQL answers. Unreachable: the suites fail when `CI=true` (CI must
 * never skip them silently) and are skipped with a loud notice otherwise.
 */
export async function postgresReachable(): Promise<boolean> {
  try {
    await withClient((client) => client.query('SELECT 1'));
    return true;
  } catch (err) {
    if (process.env.CI === 'true')
      throw new Error(`PostgreSQL at ${POSTGRES_URL} is unreachable and CI=true`, { cause: err });
    console.warn(
      `\n!!! SKIPPING the PostgreSQL store tests: no PostgreSQL at ${POSTGRES_URL} (set CI=true to fail instead) !!!\n`,
    );
    return false;
  }
}

/** A schema name no other test uses (`sb_test_` and 16 hex digits). */
export function randomSchemaName(): string {
  return `sb_test_${randomBytes(8).toString('hex')}`;
}

/** Drops `schema` with everything in it; nothing happens when it does not exist. */
export async function dropSchema(schema: string): Promise<void> {
  await withClient((client) =>
    client.query(`DROP SCHEMA IF EXISTS ${client.escapeIdentifier(schema)} CASCADE`),
  );
}

/** Queries `text` on the shared PostgreSQL, for assertions on what a store wrote. */
export async function queryPostgres<Row>(text: string, values: unknown[] = []): Promise<Row[]> {
  return withClient(async (client) => (await client.query(text, values)).rows as Row[]);
}

/** A connection string to a port of 127.0.0.1 nothing listens on (connections are refused). */
export async function closedPostgresUrl(): Promise<string> {
  return `postgres://postgres@127.0.0.1:${await freePort()}/test`;
}
