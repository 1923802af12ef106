import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, chownSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Client } from 'pg';
import { freePort } from './free-port.js';

/** The PostgreSQL the tests run against; every test keeps to a schema of its own. */
export const POSTGRES_URL =
  process.env.SWITCHBOARD_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/** Probes give up quickly instead of waiting on a database that is away. */
const PROBE_TIMEOUT_MS = 2000;

async function withClient<Result>(
  work: (client: Client) => Promise<Result>,
  url = POSTGRES_URL,
): Promise<Result> {
  const client = new Client({
    connectionString: url,
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
export async function queryPostgres<Row>(
  text: string,
  values: unknown[] = [],
  url = POSTGRES_URL,
): Promise<Row[]> {
  return withClient(async (client) => (await client.query(text, values)).rows as Row[], url);
}

/** A connection string to a port of 127.0.0.1 nothing listens on (connections are refused). */
export async function closedPostgresUrl(): Promise<string> {
  return `postgres://postgres@127.0.0.1:${await freePort()}/test`;
}

/**
 * Runs a PostgreSQL tool. PostgreSQL refuses to run as root, so as root the tool runs as the
 * `postgres` user, which then owns the data folder.
 */
async function runPostgresTool(command: string): Promise<void> {
  const [file, args] =
    process.getuid?.() === 0 ? ['su', ['postgres', '-s', '/bin/sh', '-c', command]] : ['sh', ['-c', command]];
  await promisify(execFile)(file, args as string[]);
}

/**
 * A PostgreSQL of the test's own on a free port (trust auth, database `test`), for outage tests:
 * stopping it touches nothing else. Needs `initdb` and `pg_ctl` on PATH; starts in about 3 s.
 */
export async function startPrivatePostgres() {
  const port = await freePort();
  const folder = mkdtempSync(join(tmpdir(), 'switchboard-postgres-'));
  const data = join(folder, 'data');
  if (process.getuid?.() === 0) {
    const { uid, gid } = await postgresUser();
    chownSync(folder, uid, gid);
    chmodSync(folder, 0o700);
  }
  const url = `postgres://postgres@127.0.0.1:${port}/test`;
  const pgCtl = (action: string) =>
    runPostgresTool(
      `pg_ctl -D '${data}' -o "-p ${port} -k '${folder}' -c listen_addresses=127.0.0.1" -l '${folder}/log' -w ${action}`,
    );

  await runPostgresTool(`initdb -D '${data}' -U postgres --auth=trust >/dev/null`);
  await pgCtl('start');
  await withClient(
    (client) => client.query('CREATE DATABASE test'),
    `postgres://postgres@127.0.0.1:${port}/postgres`,
  );

  return {
    url,
    /** Starts it again after `stop`, with the data it had. */
    start: () => pgCtl('start'),
    /** Stops it at once (`-m immediate`: connections are cut as in a crash). */
    stop: () => pgCtl('-m immediate stop'),
    async remove() {
      await pgCtl('-m immediate stop').catch(() => {});
      rmSync(folder, { recursive: true, force: true });
    },
  };
}

/** The uid and gid of the `postgres` user. */
async function postgresUser(): Promise<{ uid: number; gid: number }> {
  const { stdout } = await promisify(execFile)('id', ['-u', 'postgres']);
  const { stdout: group } = await promisify(execFile)('id', ['-g', 'postgres']);
  return { uid: Number(stdout.trim()), gid: Number(group.trim()) };
}
