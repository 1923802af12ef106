import { hostname } from 'node:os';
import { type Config, DEFAULT_SQLITE_PATH } from '@switchboard/config';
import {
  type AuditLog,
  type ChannelLeases,
  type HandoffStore,
  type HistoryStore,
  type IngressRefusal,
  type KeptOutcome,
  type Logger,
  type MessageStatusStore,
  type PipelinePolicy,
  type PoolPipelinePolicy,
  type QueryPool,
  type RateBuckets,
  type ReplicaEvents,
  type ReplyOutbox,
  type TenantShare,
  createMemoryAuditLog,
  createMemoryChannelLeases,
  createMemoryHandoffStore,
  createMemoryHistoryStore,
  createMemoryMessageStatusStore,
  createMemoryQueryPool,
  createMemoryRateBuckets,
  createMemoryReplyOutbox,
  within,
} from '@switchboard/core';
import type {
  RedisChannelLeases,
  RedisKeptOutcomes,
  RedisQueryPool,
  RedisRateBuckets,
  RedisReplicaEvents,
  ReplicaView,
} from '@switchboard/store-redis';
import type { FleetConfigStore } from './reload/fleet-config.js';
import type { SqliteStore } from '@switchboard/store-sqlite';

/** What every query pool is built from, whichever store holds it. */
export interface PoolOptions {
  concurrency: Config['concurrency'];
  limits: Config['queue'];
  /** Whole policies: a shared store also checks that replicas agree on retry and timeout. */
  pipelines: readonly (PipelinePolicy & PoolPipelinePolicy)[];
  /** The tenants' shares of the pool, held by every replica together with `store: redis`. */
  tenants?: readonly TenantShare[];
  logger: Logger;
  /**
   * With `store: redis`: a renewal found that the fleet's limits differ from this replica's (a
   * reload elsewhere); the gateway reads its file again (`FleetFollower.reconcile`).
   */
  reconcile?(): Promise<void>;
}

/** A store's answer to the readiness probe. */
export interface StoreHealth {
  ok: boolean;
  /** Why not, when not. */
  detail?: string;
}

/** The audit log, statuses and history: where settled messages are recorded (`audit:`). */
export interface RecordStores {
  auditLog: AuditLog;
  statuses: MessageStatusStore;
  history: HistoryStore;
  /** Whether the database answers a read (for /readyz); the detail names the database. */
  health(): Promise<StoreHealth>;
  /** Closes the file or connections. */
  close(): Promise<void>;
}

/** The stores the gateway runs on, opened from `store:` and `audit:`. */
export interface Stores extends RecordStores {
  /**
   * Where answered turns leave their replies (docs/design.md §2 "Outbox"): in the SQLite file
   * with `store: sqlite`, in memory with `store: memory`, in Redis (shared by the replicas) with
   * `store: redis`.
   */
  outbox: ReplyOutbox;
  /**
   * The sessions an operator took over and their transcripts (docs/design.md §2 "Handoff"): in
   * memory with `store: memory`, in the SQLite file `store.path` with `store: sqlite`, in Redis
   * (shared by the replicas) with `store: redis`.
   */
  handoffs: HandoffStore;
  /**
   * Whether the records are written through the outbox's group commit (`store: sqlite` with the
   * audit in the same file): a delivery's removal, its audit record and its final message status
   * then commit together.
   */
  recordsShareOutboxCommit?: boolean;
  /**
   * With `store: sqlite`: the commits and statements run on the file of `store.path` so far, for
   * `/metrics` and the benchmarks (what a message costs the file).
   */
  writeCounts?: () => { commits: number; statements: number };
  /** The clock the reply sender claims by: the Redis server's with `store: redis`, else this host's. */
  outboxNow?: () => number;
  /** Builds the query pool on the configured store (docs/design.md §2 "Query pool", §5). */
  createPool(options: PoolOptions): Promise<QueryPool>;
  /**
   * The events shared with the other replicas (outcomes, turn starts, a session's replies), once
   * `createPool` resolved: with `store: redis`, over Redis among the replicas sharing the pool
   * (docs/design.md §5 "Several replicas"); null for a pool of one process.
   */
  replicaEvents(): ReplicaEvents | null;
  /** With `store: redis`, once `createPool` resolved: the replicas sharing the pool (`/admin/queues`). */
  replicas?: () => Promise<ReplicaView[]>;
  /** With `store: redis`, once `createPool` resolved: the fleet's configuration version. */
  fleetConfig?: () => FleetConfigStore;
  /**
   * Who holds each single-owner connection, once `createPool` resolved (docs/design.md §5
   * "Single-owner connections"): with `store: redis` leases shared by the replicas and this
   * replica's id (the pool's); otherwise leases of this process alone, which it always gets.
   */
  channelLeases(): { leases: ChannelLeases; replicaId: string };
  /**
   * The token buckets pacing the chat channels' sends (docs/design.md §3 "Pacing"), once
   * `createPool` resolved: in Redis, shared by the replicas, with `store: redis`; else in memory.
   */
  rateBuckets(): RateBuckets;
  /**
   * The tenants' quotas (docs/design.md §10), once `createPool` resolved: in Redis on Redis' own
   * clock (`TIME`, read in each take), shared by the replicas, with `store: redis`; else the
   * pacing buckets of this process (a quota's keys never meet theirs), full again after a restart.
   */
  quotaBuckets(): RateBuckets;
  /** Closes the pool's connections (the pool must be drained first), then the record stores. */
  close(): Promise<void>;
  /** Why admission must refuse now (a full audit outbox), or undefined (`createIngress` `refuseWhen`). */
  refusal?: () => IngressRefusal | undefined;
  /**
   * With `store: redis`: the outcomes the settling scripts kept until their records are stored
   * (docs/design.md §5 "Outcomes kept with their settlement"), once `createPool`
   * resolved.
   */
  keptOutcomes?: () => RedisKeptOutcomes | undefined;
}

/** What the stores need from the gateway. */
export interface StoreOptions {
  /** Which outcomes a shared store keeps beside their settlement until recorded, and how. */
  keptOutcome?: KeptOutcome;
}

// Each store package (and its database client) is imported only when the config names it.

/** How long `/readyz` waits for the database: a silent one must not hold the probe for its timeouts. */
const PROBE_TIMEOUT_MS = 1000;

/** Ready when a status read succeeds within `PROBE_TIMEOUT_MS`: one indexed lookup, cheap on every backend. */
function probe(database: string, statuses: MessageStatusStore): () => Promise<StoreHealth> {
  return async () => {
    const answer = await within(
      statuses.get('readiness-probe').then(
        () => ({ ok: true }),
        (err: unknown) => ({
          ok: false,
          detail: `${database}: ${err instanceof Error ? err.message : String(err)}`,
        }),
      ),
      PROBE_TIMEOUT_MS,
    );
    return answer === 'timeout'
      ? { ok: false, detail: `${database}: no answer within ${PROBE_TIMEOUT_MS} ms` }
      : answer;
  };
}

function sqliteRecords(store: SqliteStore): RecordStores {
  return {
    auditLog: store.auditLog,
    statuses: store.statuses,
    history: store.history,
    health: probe('sqlite', store.statuses),
    close: async () => store.close(),
  };
}

/**
 * Opens the audit log, statuses and history of `audit:` (docs/design.md §5). PostgreSQL is
 * shared by the replicas naming the same `audit.url` and `audit.schema`; a SQLite file
 * (`audit.path`, by default `store.path`) belongs to one process; `store: memory` keeps them in
 * the process unless `audit: postgres` says otherwise.
 */
async function openRecordStores(config: Config, logger: Logger): Promise<RecordStores> {
  const { audit, store } = config;
  if (audit.kind === 'postgres') {
    const { createPostgresStore } = await import('@switchboard/store-postgres');
    const postgres = await createPostgresStore({ url: audit.url, schema: audit.schema, logger });
    return { ...postgres, health: probe('postgresql', postgres.statuses) };
  }
  if (store.kind === 'memory') {
    return {
      auditLog: createMemoryAuditLog(),
      statuses: createMemoryMessageStatusStore(),
      history: createMemoryHistoryStore(),
      health: async () => ({ ok: true }),
      close: async () => {},
    };
  }
  // `store: redis` never gets here: the config asks it for `audit: postgres`.
  const storePath = store.kind === 'sqlite' ? store.path : DEFAULT_SQLITE_PATH;
  const { createSqliteStore } = await import('@switchboard/store-sqlite');
  return sqliteRecords(createSqliteStore({ path: audit.path ?? storePath }));
}

/**
 * Opens the configured stores: the records of `audit:` and the pool of `store:` — in memory,
 * in memory journaled to the SQLite file `store.path` (which also holds the records unless
 * `audit:` names another place), or in Redis, shared by every replica with the same
 * `store.prefix`.
 */
export async function openStores(
  config: Config,
  logger: Logger,
  options: StoreOptions = {},
): Promise<Stores> {
  const { audit, store } = config;
  if (store.kind === 'redis')
    return withRedisPool(config, await openRecordStores(config, logger), logger, options);
  const processLeases = { leases: createMemoryChannelLeases(), replicaId: `${hostname()}:${process.pid}` };
  const processBuckets = createMemoryRateBuckets();
  if (store.kind === 'memory') {
    const records = await openRecordStores(config, logger);
    return {
      ...records,
      outbox: createMemoryReplyOutbox(),
      handoffs: createMemoryHandoffStore(),
      createPool: async (options) => createMemoryQueryPool(options),
      replicaEvents: () => null,
      channelLeases: () => processLeases,
      rateBuckets: () => processBuckets,
      quotaBuckets: () => processBuckets,
    };
  }
  const { createSqliteStore } = await import('@switchboard/store-sqlite');
  const file = createSqliteStore({ path: store.path });
  const sharesFile = audit.kind === 'sqlite' && (audit.path ?? store.path) === store.path;
  const records = sharesFile
    ? sqliteRecords(file)
    : await openRecordStores(config, logger).catch((err: unknown) => {
        file.close();
        throw err;
      });
  return {
    ...records,
    // In the file that journals the pool: a settlement's outbox row and journal removal, and a
    // delivery's removal and audit record, go through one group commit.
    outbox: file.outbox,
    handoffs: file.handoffs,
    recordsShareOutboxCommit: sharesFile,
    writeCounts: () => file.counts,
    createPool: async (options) => createMemoryQueryPool({ ...options, journal: file.journal }),
    replicaEvents: () => null,
    channelLeases: () => processLeases,
    rateBuckets: () => processBuckets,
    quotaBuckets: () => processBuckets,
    async close() {
      if (!sharesFile) file.close();
      await records.close();
    },
  };
}

type RedisStoreConfig = Extract<Config['store'], { kind: 'redis' }>;

/** How much longer than the longest `outbound.send_timeout` a replica holds a delivery it claimed. */
const REPLY_LEASE_MARGIN_MS = 15_000;

/**
 * The pool in Redis, shared by every replica with the same `store.prefix` (docs/design.md §5),
 * beside the records in PostgreSQL that the same replicas share, and the events they share.
 * Audit records and final statuses PostgreSQL cannot take wait in a bounded outbox in Redis;
 * while it is full, admission refuses.
 */
async function withRedisPool(
  config: Config,
  records: RecordStores,
  logger: Logger,
  { keptOutcome }: StoreOptions,
): Promise<Stores> {
  const store = config.store as RedisStoreConfig;
  // The schema gives exactly one of them.
  const target = store.cluster ?? (store.url as string);
  const {
    createAuditOutbox,
    createRedisChannelLeases,
    createRedisHandoffStore,
    createPartitionedKeptOutcomes,
    createPartitionedQueryPool,
    createPartitionedReplyOutbox,
    createRedisKeptOutcomes,
    createRedisQueryPool,
    createRedisRateBuckets,
    createRedisReplicaEvents,
    createRedisReplyOutbox,
  } = await import('@switchboard/store-redis');
  // Every store whose writes answer for a message (accept it, run it, settle it, reply to it,
  // record it) or own a channel waits for the replicas the config asks for.
  const replicated = {
    url: target,
    prefix: store.prefix,
    replication: { replicas: store.wait_replicas, timeoutMs: store.wait_timeout },
  };
  const outbox = await createAuditOutbox({
    ...replicated,
    inner: records.auditLog,
    statuses: records.statuses,
    maxEntries: config.audit.kind === 'postgres' ? config.audit.outboxMaxEntries : undefined,
    logger,
  }).catch(async (err: unknown) => {
    await records.close();
    throw err;
  });
  // A claim outlives the longest send by a margin, so that only a replica that died (or lost
  // Redis for that long) has its deliveries claimed again by another.
  const replyLeaseMs =
    Math.max(0, ...config.channels.map((channel) => channel.outbound.sendTimeoutMs)) + REPLY_LEASE_MARGIN_MS;
  const replyOptions = { ...replicated, leaseMs: replyLeaseMs, keptOutcome, logger };
  const replies = await (store.partitions > 1
    ? createPartitionedReplyOutbox({ ...replyOptions, partitions: store.partitions })
    : createRedisReplyOutbox(replyOptions)
  ).catch(async (err: unknown) => {
    await outbox.shutdown();
    await records.close();
    throw err;
  });
  const handoffs = await createRedisHandoffStore(replicated).catch(async (err: unknown) => {
    await replies.close();
    await outbox.shutdown();
    await records.close();
    throw err;
  });
  let pool: RedisQueryPool | undefined;
  let replicaEvents: RedisReplicaEvents | null = null;
  let channelLeases: RedisChannelLeases | undefined;
  let rateBuckets: RedisRateBuckets | undefined;
  let quotaBuckets: RedisRateBuckets | undefined;
  let keptOutcomes: RedisKeptOutcomes | undefined;
  return {
    ...records,
    auditLog: outbox,
    statuses: outbox.statuses ?? records.statuses,
    outbox: replies,
    handoffs,
    outboxNow: () => replies.now(),
    refusal: outbox.refusal,
    async createPool(options) {
      const opened =
        store.partitions > 1
          ? await createPartitionedQueryPool({
              ...replicated,
              keptOutcome,
              ...options,
              partitions: store.partitions,
              outbox: replies,
            })
          : await createRedisQueryPool({ ...replicated, keptOutcome, ...options, outbox: replies });
      replicaEvents = await createRedisReplicaEvents({
        url: target,
        prefix: store.prefix,
        replicaId: opened.replicaId,
        logger: options.logger,
      }).catch(async (err: unknown) => {
        await opened.shutdown();
        throw err;
      });
      channelLeases = await createRedisChannelLeases(replicated).catch(async (err: unknown) => {
        await replicaEvents?.close();
        await opened.shutdown();
        throw err;
      });
      rateBuckets = await createRedisRateBuckets({
        url: target,
        prefix: store.prefix,
        now: replies.now,
      }).catch(async (err: unknown) => {
        await channelLeases?.close();
        await replicaEvents?.close();
        await opened.shutdown();
        throw err;
      });
      // One clock for every replica's takes: Redis' own, not each host's (a quota is cluster-wide).
      quotaBuckets = await createRedisRateBuckets({
        url: target,
        prefix: store.prefix,
        now: 'redis',
      }).catch(async (err: unknown) => {
        await rateBuckets?.close();
        await channelLeases?.close();
        await replicaEvents?.close();
        await opened.shutdown();
        throw err;
      });
      const keptOptions = { ...replicated, now: replies.now, logger: options.logger };
      keptOutcomes = await (store.partitions > 1
        ? createPartitionedKeptOutcomes({ ...keptOptions, partitions: store.partitions })
        : createRedisKeptOutcomes(keptOptions)
      ).catch(async (err: unknown) => {
        await quotaBuckets?.close();
        await rateBuckets?.close();
        await channelLeases?.close();
        await replicaEvents?.close();
        await opened.shutdown();
        throw err;
      });
      pool = opened;
      return pool;
    },
    replicaEvents: () => replicaEvents,
    keptOutcomes: () => keptOutcomes,
    replicas: async () => (pool === undefined ? [] : pool.replicas()),
    fleetConfig() {
      if (pool === undefined) throw new Error('fleetConfig() before createPool()');
      return pool;
    },
    channelLeases() {
      if (pool === undefined || channelLeases === undefined)
        throw new Error('channelLeases() before createPool()');
      return { leases: channelLeases, replicaId: pool.replicaId };
    },
    rateBuckets() {
      if (rateBuckets === undefined) throw new Error('rateBuckets() before createPool()');
      return rateBuckets;
    },
    quotaBuckets() {
      if (quotaBuckets === undefined) throw new Error('quotaBuckets() before createPool()');
      return quotaBuckets;
    },
    // Ready while messages can be admitted and recorded: PostgreSQL away is named, but only an
    // outbox full stops admission (a load balancer must not take every replica out with it).
    async health() {
      const [redis, database] = await Promise.all([
        pool?.health() ?? { ok: false, detail: 'the pool is not connected yet' },
        records.health(),
      ]);
      if (!redis.ok)
        return {
          ok: false,
          detail: [redis, database].flatMap((check) => (check.ok ? [] : [check.detail])).join('; '),
        };
      if (database.ok) return { ok: true };
      return outbox.isFull()
        ? { ok: false, detail: `${database.detail}; the audit outbox is full` }
        : { ok: true, detail: `${database.detail}; audit records and statuses wait in the redis outbox` };
    },
    async close() {
      // Each step runs even if one before it failed: a connection left open keeps the process up.
      const steps = [
        () => pool?.shutdown(),
        () => replicaEvents?.close(),
        () => channelLeases?.close(),
        () => rateBuckets?.close(),
        () => quotaBuckets?.close(),
        // After the pool: the forgets of the last records written go out before the connection closes.
        () => keptOutcomes?.close(),
        () => outbox.shutdown(),
        () => replies.close(),
        () => handoffs.close(),
        () => records.close(),
      ];
      const failures: unknown[] = [];
      for (const step of steps)
        await Promise.resolve()
          .then(step)
          .catch((err: unknown) => failures.push(err));
      if (failures.length > 0) throw failures[0];
    },
  };
}
