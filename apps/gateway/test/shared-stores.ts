import { randomUUID } from 'node:crypto';
import { POSTGRES_URL, dropSchema, randomSchemaName } from '@switchboard/testkit/postgres';
import { keptOutcomeKeysOf, partitionPrefixOf } from '@switchboard/store-redis';
import { REDIS_URL, removePoolKeys } from '@switchboard/testkit/redis';
import { Cluster, Redis } from 'ioredis';
import { type Cleanup, startServe, tempDir, writeConfig } from './serve-process.js';

/** Where a test's replicas keep things: a pool in Redis and a PostgreSQL schema for the records. */
export interface SharedStores {
  redisUrl: string;
  prefix: string;
  postgresUrl: string;
  schema: string;
  /** More keys of `store:`, as YAML flow (`wait_replicas: 1`). */
  storeOptions?: string;
  /** `store.partitions`, when the pool spreads over more than one. */
  partitions?: number;
  /** The seed nodes of a Redis Cluster of the test's own, instead of `redisUrl` (removed with it). */
  cluster?: readonly string[];
}

/** A pool prefix and a schema of their own; on the shared servers unless `overrides` say otherwise. */
export function newStores(overrides: Partial<SharedStores> = {}): SharedStores {
  return {
    redisUrl: REDIS_URL,
    prefix: `sb-e2e-${randomUUID()}`,
    postgresUrl: POSTGRES_URL,
    schema: randomSchemaName(),
    ...overrides,
  };
}

/** Removes the pool's keys and, on the shared PostgreSQL, the schema (stop the replicas first). */
export async function removeStores(stores: SharedStores): Promise<void> {
  for (let index = 0; stores.cluster === undefined && index < (stores.partitions ?? 1); index += 1)
    await removePoolKeys(stores.redisUrl, partitionPrefixOf(stores.prefix, index));
  if (stores.postgresUrl === POSTGRES_URL) await dropSchema(stores.schema);
}

/**
 * How many outcomes the settling scripts keep in `stores` until their records are written
 * (docs/design.md §5 "Outcomes kept with their settlement"): 0 once every one was recorded and let go.
 */
export async function keptOutcomeCount(stores: Pick<SharedStores, 'redisUrl' | 'prefix'>): Promise<number> {
  const redis = new Redis(stores.redisUrl);
  try {
    return await redis.hlen(keptOutcomeKeysOf(stores.prefix).hash);
  } finally {
    redis.disconnect();
  }
}

/**
 * How many messages each partition of `stores` accepted lately, read where the pool keeps them (on
 * the cluster's nodes, under each partition's hash tag, when it is one): an enqueue is remembered
 * by its request id for about a minute (`enqueueRepeatForMs` plus a margin).
 */
export async function acceptedByPartition(stores: SharedStores): Promise<number[]> {
  const client =
    stores.cluster === undefined
      ? new Redis(stores.redisUrl)
      : new Cluster(
          stores.cluster.map((url) => ({ host: new URL(url).hostname, port: Number(new URL(url).port) })),
        );
  try {
    return await Promise.all(
      Array.from({ length: stores.partitions ?? 1 }, (_, index) =>
        client.zcard(`{${partitionPrefixOf(stores.prefix, index)}}:enqueued`),
      ),
    );
  } finally {
    client.disconnect();
  }
}

/** New stores for one test, removed after it. */
export function sharedStores(cleanup: Cleanup, overrides: Partial<SharedStores> = {}): SharedStores {
  const stores = newStores(overrides);
  cleanup(() => removeStores(stores));
  return stores;
}

/**
 * New stores for a whole describe block: `yaml(rest)` is a config on them (`head` first), and
 * `remove()` goes in its `afterAll`, after its replicas stopped.
 */
export function describeStores(head = '') {
  const stores = newStores();
  return {
    yaml: (rest: string) => storesConfig(stores, `${head}\n${rest}`),
    remove: () => removeStores(stores),
  };
}

/** The head of a config on `stores` (server on a free port, the pool, the records); `rest` follows. */
export function storesConfig(stores: SharedStores, rest: string): string {
  return `server: { host: 127.0.0.1, port: 0 }
store: { kind: redis, ${redisOf(stores)}, prefix: ${stores.prefix}${stores.storeOptions === undefined ? '' : `, ${stores.storeOptions}`}${stores.partitions === undefined ? '' : `, partitions: ${stores.partitions}`} }
audit: { kind: postgres, url: "${stores.postgresUrl}", schema: ${stores.schema} }
${rest}`;
}

/** Where `store:` finds Redis: the cluster's seeds, or the one URL. */
function redisOf(stores: SharedStores): string {
  if (stores.cluster === undefined) return `url: "${stores.redisUrl}"`;
  return `cluster: [${stores.cluster.map((url) => `"${url}"`).join(', ')}]`;
}

/** `switchboard serve` `count` times on one config, one after the other (the first takes the leases). */
export async function startReplicas(count: number, yaml: string) {
  const replicas = [];
  for (let index = 0; index < count; index += 1) {
    const dir = tempDir();
    replicas.push(await startServe({ dir, configPath: writeConfig(dir, yaml) }));
  }
  return replicas;
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
  return storesConfig(
    stores,
    `pipelines: [${pipeline.yaml}]
routing: { default: ${pipeline.id} }
${extra}`,
  );
}

/** `switchboard serve` on `stores`; stopped after the test (before its stores are removed). */
export async function serveOn(cleanup: Cleanup, stores: SharedStores, extra = '', pipeline?: OnlyPipeline) {
  const dir = tempDir();
  const configPath = writeConfig(dir, redisConfig(stores, extra, pipeline));
  const gateway = await startServe({ dir, configPath });
  cleanup(() => gateway.stop('SIGTERM'));
  return { ...gateway, configPath };
}
