import { randomUUID } from 'node:crypto';
import { POSTGRES_URL, dropSchema, randomSchemaName } from '@switchboard/testkit/postgres';
import { REDIS_URL, removePoolKeys } from '@switchboard/testkit/redis';
import { startServe, tempDir, writeConfig } from './serve-process.js';

/** Registers a cleanup to run after the test (`useCleanups()`). */
type Cleanup = (cleanup: () => Promise<unknown>) => void;

/** Where a test's replicas keep things: a pool in Redis and a PostgreSQL schema for the records. */
export interface SharedStores {
  redisUrl: string;
  prefix: string;
  postgresUrl: string;
  schema: string;
}

/** A pool prefix and a schema of the test's own, removed after it; on the shared servers by default. */
export function sharedStores(cleanup: Cleanup, overrides: Partial<SharedStores> = {}): SharedStores {
  const stores = {
    redisUrl: REDIS_URL,
    prefix: `sb-e2e-${randomUUID()}`,
    postgresUrl: POSTGRES_URL,
    schema: randomSchemaName(),
    ...overrides,
  };
  cleanup(async () => {
    await removePoolKeys(stores.redisUrl, stores.prefix);
    if (stores.postgresUrl === POSTGRES_URL) await dropSchema(stores.schema);
  });
  return stores;
}

/** The one pipeline of a config, which routing sends everything to. */
export interface OnlyPipeline {
  id: string;
  /** Its entry in `pipelines:`, as YAML flow. */
  yaml: string;
}

const ECHO: OnlyPipeline = { id: 'echo', yaml: '{ id: echo, type: echo }' };

/** A gateway config on the pool and the PostgreSQL schema of `stores`. */
export function redisConfig(stores: SharedStores, extra = '', pipeline = ECHO): string {
  return `server: { host: 127.0.0.1, port: 0 }
store: { kind: redis, url: "${stores.redisUrl}", prefix: ${stores.prefix} }
audit: { kind: postgres, url: "${stores.postgresUrl}", schema: ${stores.schema} }
pipelines: [${pipeline.yaml}]
routing: { default: ${pipeline.id} }
${extra}`;
}

/** `switchboard serve` on `stores`; stopped after the test (before its stores are removed). */
export async function serveOn(cleanup: Cleanup, stores: SharedStores, extra = '', pipeline?: OnlyPipeline) {
  const dir = tempDir();
  const configPath = writeConfig(dir, redisConfig(stores, extra, pipeline));
  const gateway = await startServe({ dir, configPath });
  cleanup(() => gateway.stop('SIGTERM'));
  return { ...gateway, configPath };
}
