import { randomUUID } from 'node:crypto';
import {
  type AddAndClaimResult,
  type Outcome,
  PipelinePolicySchema,
  SwitchboardError,
  type Turn,
  createMemoryAuditLog,
  createMemoryMessageStatusStore,
} from '@switchboard/core';
import {
  auditRecordFixture,
  channelLeasesContract,
  deliveryFixture,
  handoffStoreContract,
  messageStatusFixture,
  messageStatusStoreContract,
  queryPoolContract,
  rateBucketsContract,
  replicaEventsContract,
  replyOutboxContract,
} from '@switchboard/contracts';
import { postgresReachable } from '@switchboard/testkit/postgres';
import { startPrivateCluster } from '@switchboard/testkit/redis';
import { type Cluster, Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  KEPT_OUTCOME_LEASE_MS,
  createAuditOutbox,
  createPartitionedKeptOutcomes,
  createPartitionedQueryPool,
  createPartitionedReplyOutbox,
  createRedisChannelLeases,
  createRedisHandoffStore,
  createRedisQueryPool,
  createRedisRateBuckets,
  createRedisReplicaEvents,
  createRedisReplyOutbox,
  keptOutcomeKeysOf,
  type RedisQueryPool,
} from '../src/index.js';
import { auditOutboxKeysOf } from '../src/audit-outbox.js';
import { partitionPrefixOf } from '../src/partitions.js';
import { connect, createRedisClient, primaryOf } from '../src/redis-connection.js';
import { auditOutboxStatuses } from './audit-outbox-statuses.js';
import {
  countSocketWrites,
  deadLetters,
  keyInPartition,
  manualClock,
  queued,
  recordingLogger,
} from './redis-harness.js';

/**
 * Every store on a Redis Cluster of three primaries (`store.cluster`): each contract suite as on
 * one Redis. A deployment's keys share one slot, so its scripts run on the primary holding it;
 * the keys of several prefixes spread over the primaries. The cluster is this file's own, on free
 * ports, and goes with it (so no key is removed test by test).
 */
let cluster: Awaited<ReturnType<typeof startPrivateCluster>>;
// Kept so that a start the hook's timeout abandoned is still removed once it finishes.
let starting: ReturnType<typeof startPrivateCluster> | undefined;
beforeAll(async () => {
  starting = startPrivateCluster(3);
  cluster = await starting;
}, 60_000);
afterAll(async () => {
  await (await starting?.catch(() => undefined))?.remove();
});

// The audit outbox sits in front of PostgreSQL: its statuses need one besides the cluster.
const auditStoreReachable = await postgresReachable();

/** Opens stores with `open` under one fresh prefix; `close` stops each with `stop`. */
function opener<Store>(
  open: (prefix: string) => Promise<Store>,
  stop: (store: Store) => Promise<void> = (store) => (store as { close(): Promise<void> }).close(),
) {
  const prefix = `sb-cluster-${randomUUID()}`;
  const opened: Store[] = [];
  return {
    async open() {
      const store = await open(prefix);
      opened.push(store);
      return store;
    },
    async close() {
      for (const store of opened) await stop(store);
    },
  };
}

/** Per node, the hash tags of its keys matching `pattern`. */
function heldPrefixes(pattern: string): Promise<Array<Set<string>>> {
  return Promise.all(
    cluster.nodes.map(async (node) => {
      const client = new Redis(node.url);
      try {
        const keys = await client.keys(pattern);
        return new Set(keys.map((key) => key.slice(1, key.indexOf('}'))));
      } finally {
        client.disconnect();
      }
    }),
  );
}

/** How often each node ran `command` (`INFO commandstats`), in the order of `cluster.nodes`. */
function callsPerNode(command: string): Promise<number[]> {
  return Promise.all(
    cluster.nodes.map(async (node) => {
      const client = new Redis(node.url);
      try {
        const stats = await client.info('commandstats');
        return Number(new RegExp(`^cmdstat_${command}:calls=(\\d+)`, 'm').exec(stats)?.[1] ?? 0);
      } finally {
        client.disconnect();
      }
    }),
  );
}

describe('on a Redis Cluster', () => {
  queryPoolContract('redis cluster', async ({ now, concurrency, limits, pipelines, tenants }) => {
    const pools = opener<RedisQueryPool>(
      (prefix) =>
        createRedisQueryPool({ url: cluster.urls, prefix, now, concurrency, limits, pipelines, tenants }),
      (pool) => pool.shutdown(),
    );
    return { store: await pools.open(), peer: pools.open, close: pools.close };
  });

  queryPoolContract(
    'redis cluster, 3 partitions',
    async ({ now, concurrency, limits, pipelines, tenants }) => {
      const pools = opener<RedisQueryPool>(
        (prefix) =>
          createPartitionedQueryPool({
            url: cluster.urls,
            prefix,
            partitions: 3,
            now,
            concurrency,
            limits,
            pipelines,
            tenants,
          }),
        (pool) => pool.shutdown(),
      );
      return { store: await pools.open(), peer: pools.open, close: pools.close };
    },
    { partitioned: true },
  );

  replyOutboxContract('redis cluster', async () => {
    const outboxes = opener((prefix) =>
      createRedisReplyOutbox({ url: cluster.urls, prefix, leaseMs: 60_000 }),
    );
    return { store: await outboxes.open(), peer: outboxes.open, close: outboxes.close };
  });

  replyOutboxContract('redis cluster, 3 partitions', async () => {
    const outboxes = opener((prefix) =>
      createPartitionedReplyOutbox({ url: cluster.urls, prefix, leaseMs: 60_000, partitions: 3 }),
    );
    return { store: await outboxes.open(), peer: outboxes.open, close: outboxes.close };
  });

  channelLeasesContract('redis cluster', async () => {
    const leases = opener((prefix) => createRedisChannelLeases({ url: cluster.urls, prefix }));
    return { store: await leases.open(), close: leases.close };
  });

  handoffStoreContract('redis cluster', async () => {
    const stores = opener((prefix) => createRedisHandoffStore({ url: cluster.urls, prefix }));
    return { store: await stores.open(), peer: stores.open, close: stores.close };
  });

  rateBucketsContract('redis cluster', async ({ now }) => {
    const buckets = opener((prefix) => createRedisRateBuckets({ url: cluster.urls, prefix, now }));
    return { store: await buckets.open(), close: buckets.close };
  });

  replicaEventsContract('redis cluster', async () => {
    let replicas = 0;
    const events = opener((prefix) =>
      createRedisReplicaEvents({
        url: cluster.urls,
        prefix,
        replicaId: `replica-${++replicas}`,
        logger: recordingLogger(),
      }),
    );
    return { store: await events.open(), peer: events.open, close: events.close };
  });

  describe.skipIf(!auditStoreReachable)('with PostgreSQL behind the audit outbox', () => {
    messageStatusStoreContract(
      'redis cluster audit outbox over postgres',
      auditOutboxStatuses(() => cluster.urls),
    );
  });

  it("keeps the audit outbox's records and statuses on its deployment's primary while the audit store is away, and drains them once it answers", async () => {
    const log = createMemoryAuditLog();
    const statuses = createMemoryMessageStatusStore();
    let away = true;
    /** `write`, refused while `away` as an unreachable PostgreSQL refuses it. */
    const unlessAway =
      <Value>(write: (value: Value) => Promise<void>) =>
      async (value: Value) => {
        if (away) throw new SwitchboardError('SB_STORE_UNAVAILABLE', { message: 'audit store away' });
        await write(value);
      };
    // The contract above runs with the audit store answering, so its statuses never reach Redis.
    const prefix = `sb-cluster-audit-${randomUUID()}`;
    const outbox = await createAuditOutbox({
      url: cluster.urls,
      prefix,
      inner: { ...log, append: unlessAway((record) => log.append(record)) },
      statuses: { ...statuses, put: unlessAway((status) => statuses.put(status)) },
      drainEveryMs: 60_000,
    });
    const final = messageStatusFixture('m1', { status: 'completed', updated_at: 5 });
    try {
      await outbox.append(auditRecordFixture(1));
      await outbox.statuses?.put(messageStatusFixture('m1', { status: 'running', updated_at: 4 }));
      await outbox.statuses?.put(final);
      expect(await outbox.statuses?.get('m1')).toEqual(final);
      // The record and both statuses wait in the outbox's list, in its slot.
      const client = createRedisClient(cluster.urls);
      try {
        await connect(client, 1000);
        expect(await client.llen(auditOutboxKeysOf(prefix).outbox)).toBe(3);
      } finally {
        client.disconnect();
      }
      away = false;
      expect(await outbox.drain()).toBe(3);
      expect(await statuses.get('m1')).toEqual(final);
      expect((await log.query({ limit: 10 })).items.map((record) => record.id)).toEqual([
        auditRecordFixture(1).id,
      ]);
    } finally {
      await outbox.shutdown();
    }
  });

  it("keeps each partition's deliveries on one primary and spreads the partitions over the primaries", async () => {
    const partitions = 6;
    const outbox = await createPartitionedReplyOutbox({
      url: cluster.urls,
      prefix: 'sb-cluster-partitioned',
      leaseMs: 60_000,
      partitions,
    });
    try {
      for (let index = 0; index < 4 * partitions; index++)
        await outbox.add(deliveryFixture(index, { chat: `chat-${index}` }));
      const holders = await heldPrefixes('{sb-cluster-partitioned*');
      for (let index = 0; index < partitions; index++) {
        const prefix = partitionPrefixOf('sb-cluster-partitioned', index);
        expect(holders.filter((held) => held.has(prefix))).toHaveLength(1);
      }
      expect(holders.filter((held) => held.size > 0).length).toBeGreaterThan(1);
    } finally {
      await outbox.close();
    }
  });

  it("stores a turn's answer in the complete script of its session's partition, on that partition's primary", async () => {
    const partitions = 3;
    const prefix = `sb-cluster-answer-${randomUUID()}`;
    const outbox = await createPartitionedReplyOutbox({
      url: cluster.urls,
      prefix,
      leaseMs: 60_000,
      partitions,
    });
    const pool = await createPartitionedQueryPool({
      url: cluster.urls,
      prefix,
      partitions,
      concurrency: { global: 20, perSession: 1 },
      limits: { maxPending: 10_000, maxPendingPerSession: 500 },
      pipelines: [PipelinePolicySchema.parse({ id: 'p' })],
      outbox,
    });
    try {
      for (let index = 0; index < partitions; index++) {
        const session = keyInPartition(index, partitions, 'session');
        await pool.enqueue(queued(session, Date.now()));
        const turn = (await pool.claim()) as Turn;
        const delivery = deliveryFixture(index, { chat: session });
        const added: AddAndClaimResult[] = [];
        const replies = {
          delivery,
          claimAt: outbox.now(),
          stored: (result: AddAndClaimResult) => added.push(result),
        };
        // The add's LLEN (its chat's length, reply-outbox/includes/add-delivery) runs in the
        // complete script alone here: it counts where that script ran.
        const before = await callsPerNode('llen');
        expect(await pool.complete(turn, [], { replies })).toBe('settled');
        const after = await callsPerNode('llen');
        expect(added[0]?.claim?.delivery).toBe(delivery);
        const holders = await heldPrefixes(`{${partitionPrefixOf(prefix, index)}}:*`);
        const primary = holders.findIndex((held) => held.has(partitionPrefixOf(prefix, index)));
        expect(after.map((calls, node) => calls - (before[node] as number))).toEqual(
          cluster.nodes.map((_, node) => (node === primary ? 1 : 0)),
        );
      }
      expect(await outbox.pending()).toEqual({ [deliveryFixture(0).channel]: partitions });
      expect(await pool.stats()).toMatchObject({ pending: 0, inflight: 0 });
    } finally {
      await pool.shutdown();
      await outbox.close();
    }
  });

  it("keeps a settlement's outcomes in its session's partition, and claims and forgets them on that partition's primary", async () => {
    const partitions = 3;
    const prefix = `sb-cluster-kept-${randomUUID()}`;
    const clock = manualClock();
    const pool = await createPartitionedQueryPool({
      url: cluster.urls,
      prefix,
      partitions,
      now: clock.now,
      concurrency: { global: 20, perSession: 1 },
      limits: { maxPending: 10_000, maxPendingPerSession: 500 },
      pipelines: [PipelinePolicySchema.parse({ id: 'p' })],
      keptOutcome: (outcome) => JSON.stringify(outcome),
    });
    const openKept = () =>
      createPartitionedKeptOutcomes({
        url: cluster.urls,
        prefix,
        partitions,
        now: clock.now,
        forgetEveryMs: 1,
      });
    const ended: Outcome[] = [];
    try {
      for (let index = 0; index < partitions; index++) {
        await pool.enqueue(queued(keyInPartition(index, partitions, 'session'), clock.now()));
        const turn = (await pool.claim()) as Turn;
        const outcomes = deadLetters(turn, clock.now());
        expect(await pool.complete(turn, outcomes)).toBe('settled');
        ended.push(...outcomes);
      }
      // Each partition's kept outcomes sit on the one primary holding the rest of its keys.
      const keptHolders = await heldPrefixes(keptOutcomeKeysOf(`${prefix}*`).hash);
      for (let index = 0; index < partitions; index++) {
        const partition = partitionPrefixOf(prefix, index);
        const holders = await heldPrefixes(`{${partition}}:*`);
        expect(holders.filter((held) => held.has(partition))).toHaveLength(1);
        expect(keptHolders.map((held) => held.has(partition))).toEqual(
          holders.map((held) => held.has(partition)),
        );
      }
      const recovering = await openKept();
      try {
        expect(await recovering.claimDue()).toEqual([]);
        clock.advance(KEPT_OUTCOME_LEASE_MS);
        expect(await recovering.claimDue()).toEqual(ended);
        for (const outcome of ended) recovering.forget(outcome);
      } finally {
        // Closing writes the forgets gathered.
        await recovering.close();
      }
      clock.advance(KEPT_OUTCOME_LEASE_MS);
      const later = await openKept();
      try {
        expect(await later.claimDue()).toEqual([]);
      } finally {
        await later.close();
      }
    } finally {
      await pool.shutdown();
    }
  });

  it("sends the commands of one loop turn to a slot's primary in one write of that node's connection", async () => {
    const client = createRedisClient(cluster.urls) as Cluster;
    try {
      await connect(client, 1000);
      const tag = `{sb-cluster-writes-${randomUUID()}}`;
      const node = primaryOf(client, tag.slice(1, -1));
      // The node's connection is up once a command reached it.
      await client.get(`${tag}:warm`);
      const counted = countSocketWrites(node);
      const keys = Array.from({ length: 10 }, (_, index) => `${tag}:${index}`);
      expect(await Promise.all(keys.map((key) => client.set(key, key)))).toEqual(keys.map(() => 'OK'));
      expect(counted).toEqual({ writes: 1, chunks: 10 });
      await client.del(...keys);
    } finally {
      client.disconnect();
    }
  });

  it('keeps each deployment on one primary and spreads deployments over the primaries', async () => {
    const prefixes = Array.from({ length: 12 }, (_, index) => `sb-cluster-spread-${index}`);
    const pools = await Promise.all(
      prefixes.map((prefix) =>
        createRedisQueryPool({
          url: cluster.urls,
          prefix,
          concurrency: { global: 20, perSession: 1 },
          limits: { maxPending: 10_000, maxPendingPerSession: 500 },
          pipelines: [PipelinePolicySchema.parse({ id: 'p' })],
        }),
      ),
    );
    try {
      const holders = await heldPrefixes('{sb-cluster-spread-*');
      for (const prefix of prefixes) expect(holders.filter((held) => held.has(prefix))).toHaveLength(1);
      expect(holders.filter((held) => held.size > 0).length).toBeGreaterThan(1);
    } finally {
      await Promise.all(pools.map((pool) => pool.shutdown()));
    }
  });
});
