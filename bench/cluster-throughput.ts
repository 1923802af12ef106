/**
 * Messages/s of the cluster path: the built gateway (`switchboard serve`, one process per
 * replica) with `store: redis` and `audit: postgres`, as 1, 3 and 5 replicas on one Redis prefix
 * and one PostgreSQL schema, the echo pipeline as the no-op, default limits (20 turns at once
 * across the replicas, 1 per session). The baselines, measured in the same run, are one gateway
 * with `store: sqlite` (what the fleet's CPU per message is judged against) and one with
 * `store: memory`: the same HTTP path with no shared store.
 *
 * Load: autocannon `POST /v1/messages` (wait=true, so a 200 is a completed message), every request
 * in a new session, SETTINGS.httpConnections connections in all, split evenly over the replicas
 * (one autocannon per replica, as a round-robin load balancer would spread them). A message is
 * run by whichever replica claims it first, and its outcome reaches the accepting replica over
 * the event relay. Each setup runs SETTINGS.httpDurationS seconds once each of its gateways has
 * accepted SETTINGS.replicaWarmupMessages messages, loaded alone one after the other (V8 optimizes a
 * gateway over its first ~10k messages: a warm-up of fixed length would leave the replicas of the
 * slower setups, each with a fraction of the load, measured cold), in SETTINGS.httpRounds rounds
 * that alternate the setups; each setup's best round counts.
 *
 * Redis is a private `redis-server` on a free port with AOF, run with `appendfsync always` as
 * docker/compose.cluster.yaml configures it and again with `everysec` (Redis' default, `CONFIG
 * SET` between setups), so the price of fsyncing every write shows. A second private
 * `redis-server` (no persistence) replicates it throughout the run, so that one more setup,
 * `always` at 1 replica with `store.wait_replicas: 1`, prices `WAIT` against the same setup with
 * 0 on the same topology. Being private, the primary's `INFO commandstats` counts the gateways'
 * calls only (the replication link's own `REPLCONF`/`PSYNC` left out): Redis calls per message =
 * the delta of `calls` over every command during the measured run (the scripts' own commands,
 * renewals, wake-ups, relayed events and `WAIT`s included) ÷ the messages whose outcome the
 * replicas recorded meanwhile (`switchboard_messages_total`), not the client's completions. What
 * runs per second whatever the traffic (renewals) is in the figure, so it grows as throughput
 * falls. Redis CPU (`INFO cpu`) and the gateways' CPU (`/proc`) per message show which side is the
 * bottleneck. Everything runs on this machine: the replicas, both Redis
 * servers, PostgreSQL and the client share its cores, and the machine's busy share during each
 * run (`/proc/stat`, every process) shows whether they left any idle.
 *
 * The Redis Cluster setups run the same load on a private cluster of three primaries
 * (`startPrivateCluster`: no replicas, no persistence, so no AOF) with `store.cluster`, once with
 * `store.partitions: 1` (every key in the deployment's one slot: one primary does all the work)
 * and once with 12 (the sessions spread over the three primaries, docs/design.md §5
 * "Partitions"), at 1 and 3 replicas (3 only in a quick run, the pair the target divides). Their
 * Redis figures sum the nodes' `INFO cpu` and `INFO commandstats`, and each node's share of the
 * cluster's CPU shows whether the work spread. Whether the gateways or Redis bound the run is
 * printed beside: on a machine with fewer cores than the cluster has primaries, the gateways can
 * hold the ratio near 1× whatever the spread.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { queryPostgres } from '@switchboard/testkit/postgres';
import { eventually } from '@switchboard/testkit/eventually';
import {
  infoField,
  removePoolKeys,
  startPrivateCluster,
  startPrivateRedis,
} from '@switchboard/testkit/redis';
import type { Redis } from 'ioredis';
import { startGateway } from './support/gateway-process.js';
import { busyCoresBetween, machineCpuMs } from './support/process-cpu.js';
import { callsPerCycle } from './support/redis-commandstats.js';
import { connectAdmin, redisUsage } from './support/redis-usage.js';
import { loadAll, outcomesRecorded, replicasCpuMs, warmUpEach } from './support/replica-fleet.js';
import { type Measurement, type TargetCheck, formatNumber, progress, runScenario } from './support/report.js';
import type { ServerProcess } from './support/server-process.js';
import { SETTINGS } from './support/settings.js';

interface Setup {
  id: string;
  replicas: 1 | 3 | 5;
  /** The stores of a gateway of one process; absent for the shared setups (Redis + PostgreSQL). */
  local?: 'memory' | 'sqlite';
  /** Redis' fsync policy for a setup on the shared stores. */
  appendfsync?: 'always' | 'everysec';
  /** `store.wait_replicas`; the default (0) when absent. */
  waitReplicas?: 1;
  /** `store.partitions` on the private Redis Cluster; absent: a setup on the one Redis. */
  clusterPartitions?: 1 | 12;
}

const MEMORY_BASELINE: Setup = { id: 'gateway · store memory', replicas: 1, local: 'memory' };
/** What the fleet's CPU per message is judged against: one process with its embedded store. */
const SQLITE_BASELINE: Setup = { id: 'gateway · store sqlite', replicas: 1, local: 'sqlite' };
const REPLICA_COUNTS = [1, 3, 5] as const;
const SHARED_SETUPS: readonly Setup[] = (['always', 'everysec'] as const).flatMap((appendfsync) =>
  REPLICA_COUNTS.map((replicas) => ({
    id: `redis ${appendfsync} · ${replicas} replica${replicas === 1 ? '' : 's'}`,
    replicas,
    appendfsync,
  })),
);
/** Beside `redis always · 1 replica`, which waits for none. */
const WAITING_SETUP: Setup = {
  id: 'redis always · 1 replica · wait_replicas 1',
  replicas: 1,
  appendfsync: 'always',
  waitReplicas: 1,
};
/** A quick run keeps the replica count the target divides at. */
const CLUSTER_REPLICA_COUNTS = SETTINGS.quick ? ([3] as const) : ([1, 3] as const);
const CLUSTER_SETUPS: readonly Setup[] = ([1, 12] as const).flatMap((clusterPartitions) =>
  CLUSTER_REPLICA_COUNTS.map((replicas) => ({
    id: `redis cluster · partitions ${clusterPartitions} · ${replicas} replica${replicas === 1 ? '' : 's'}`,
    replicas,
    clusterPartitions,
  })),
);
const SETUPS: readonly Setup[] = [
  MEMORY_BASELINE,
  SQLITE_BASELINE,
  ...SHARED_SETUPS,
  WAITING_SETUP,
  ...CLUSTER_SETUPS,
];
/**
 * `redis always · 1 replica` on 2026-12-04 (docs/BENCHMARKS.md "Several replicas on one Redis"),
 * before the scripts were merged: the throughput the `appendfsync always` target multiplies.
 */
const ALWAYS_ONE_REPLICA_BEFORE_MSG_S = 176;
/** Past this share of its ceiling a side counts as what bounded a run (`boundOf`). */
const SATURATED = 0.8;
/** The machine's cores, which the replicas, Redis, PostgreSQL and the load generator share. */
const CORES = cpus().length;
/**
 * Commands of the replication link, not of the gateways: the Redis replica's acknowledgements
 * (`REPLCONF ACK`, once a second and after each `WAIT`) and its sync.
 */
const REPLICATION_COMMANDS = new Set(['replconf', 'psync', 'sync']);

interface RoundFigures {
  messagesPerS: number;
  messages: number;
  /** The messages whose outcome the replicas recorded during the run: what the per-message figures divide by. */
  outcomes: number;
  /** The slowest replica's client percentiles, ms. */
  p50Ms: number;
  p99Ms: number;
  /** The replicas' CPU per message, summed, µs, and their CPU time ÷ wall time (cores); null without procfs. */
  gatewayCpuUsPerMessage: number | null;
  /** Of `gatewayCpuUsPerMessage`, the part spent in the kernel (system calls), µs; null without procfs. */
  gatewaySystemUsPerMessage: number | null;
  gatewayBusy: number | null;
  /** The machine's busy (or stolen) share of its CPU ticks during the run, in cores (at most the machine's); null without procfs. */
  machineBusy: number | null;
  /** Setups on Redis only, summed over a cluster's nodes: Redis commands per message, by command. */
  redisCalls?: Record<string, number>;
  /** Setups on Redis only: Redis CPU per message, µs, and its CPU time ÷ wall time, summed over the nodes. */
  redisCpuUsPerMessage?: number;
  redisBusy?: number;
  /** Setups on Redis only: the busiest node's CPU time ÷ wall time (of its one main thread). */
  busiestNodeBusy?: number;
  /** Cluster setups only: each node's share of the cluster's Redis CPU, busiest first. */
  nodeShares?: number[];
}

await runScenario('cluster-throughput', async () => {
  // A replica joining is served at once (the default waits 5 s for more to join).
  const redis = await startPrivateRedis(['--repl-diskless-sync-delay', '0']);
  const redisReplica = await startPrivateRedis([
    '--appendonly',
    'no',
    '--replicaof',
    '127.0.0.1',
    String(redis.port),
  ]);
  try {
    await eventually(
      async () => (await infoField(redisReplica.url, 'replication', 'master_link_status')) === 'up',
      10_000,
      'the Redis replica in sync',
    );
  } catch (err) {
    await Promise.all([redisReplica.remove(), redis.remove()]);
    throw err;
  }
  const cluster = await startPrivateCluster(3).catch(async (err: unknown) => {
    await Promise.all([redisReplica.remove(), redis.remove()]);
    throw err;
  });
  const admin = await connectAdmin(redis.url);
  const clusterNodes = await Promise.all(cluster.urls.map(connectAdmin));
  const dir = mkdtempSync(join(tmpdir(), 'switchboard-bench-cluster-'));
  const rounds = new Map<Setup['id'], RoundFigures[]>(SETUPS.map((setup) => [setup.id, []]));

  /** Starts a setup's replicas, one after the other (the first migrates the schema), on a fresh prefix and schema. */
  async function startSetup(setup: Setup) {
    const prefix = `sb-bench-${randomUUID()}`;
    const schema = `sb_bench_${randomBytes(8).toString('hex')}`;
    if (setup.appendfsync !== undefined) await admin.config('SET', 'appendfsync', setup.appendfsync);
    // The longest wait_timeout allowed: a write that waits past it is refused (503), and the load fails.
    const waiting =
      setup.waitReplicas === undefined ? '' : `, wait_replicas: ${setup.waitReplicas}, wait_timeout: 1s`;
    const redisStore =
      setup.clusterPartitions === undefined
        ? `url: ${JSON.stringify(redis.url)}, prefix: ${prefix}${waiting}`
        : `cluster: [${cluster.urls.map((url) => JSON.stringify(url)).join(', ')}], prefix: ${prefix}, partitions: ${setup.clusterPartitions}`;
    const stores =
      setup.local === undefined
        ? {
            name: 'cluster',
            store: `{ kind: redis, ${redisStore} }`,
            audit: `{ kind: postgres, url: ${JSON.stringify(SETTINGS.postgresUrl)}, schema: ${schema} }`,
          }
        : setup.local === 'memory'
          ? { name: 'memory', store: '{ kind: memory }' }
          : {
              name: 'sqlite',
              store: `{ kind: sqlite, path: ${JSON.stringify(join(dir, `${prefix}.db`))} }`,
            };
    const replicas: ServerProcess[] = [];
    const stop = async () => {
      await Promise.all(replicas.map((replica) => replica.stop()));
      if (setup.local !== undefined) return;
      // A cluster's keys go with it at the end of the run; each setup has a prefix of its own.
      if (setup.clusterPartitions === undefined) await removePoolKeys(redis.url, prefix);
      await queryPostgres(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`, [], SETTINGS.postgresUrl);
    };
    try {
      for (let replica = 0; replica < setup.replicas; replica++)
        replicas.push(await startGateway(stores, dir));
    } catch (err) {
      await stop();
      throw err;
    }
    return { replicas, stop };
  }

  /** The Redis nodes a setup runs on: none, the one Redis, or every primary of the cluster. */
  const redisNodes = (setup: Setup): readonly Redis[] =>
    setup.local !== undefined ? [] : setup.clusterPartitions === undefined ? [admin] : clusterNodes;

  async function measureSetup(setup: Setup): Promise<RoundFigures> {
    const running = await startSetup(setup);
    try {
      await warmUpEach(running.replicas, SETTINGS.replicaWarmupMessages);
      const gatewayCpuBefore = replicasCpuMs(running.replicas);
      const machineBefore = machineCpuMs();
      const outcomesBefore = await outcomesRecorded(running.replicas);
      const redisBefore = await redisUsage(redisNodes(setup));
      const { results, wallMs } = await loadAll(running.replicas, SETTINGS.httpDurationS);
      const redisAfter = await redisUsage(redisNodes(setup));
      const outcomesAfter = await outcomesRecorded(running.replicas);
      const gatewayCpuAfter = replicasCpuMs(running.replicas);
      const machineAfter = machineCpuMs();

      const messages = results.reduce((sum, result) => sum + result.requests.total, 0);
      const outcomes = outcomesAfter - outcomesBefore;
      const gatewayCpu =
        gatewayCpuBefore === null || gatewayCpuAfter === null
          ? null
          : {
              totalMs: gatewayCpuAfter.totalMs - gatewayCpuBefore.totalMs,
              systemMs: gatewayCpuAfter.systemMs - gatewayCpuBefore.systemMs,
            };
      const figures: RoundFigures = {
        messagesPerS: messages / (wallMs / 1000),
        messages,
        outcomes,
        p50Ms: Math.max(...results.map((result) => result.latency.p50)),
        p99Ms: Math.max(...results.map((result) => result.latency.p99)),
        gatewayCpuUsPerMessage: gatewayCpu === null ? null : (gatewayCpu.totalMs * 1000) / outcomes,
        gatewaySystemUsPerMessage: gatewayCpu === null ? null : (gatewayCpu.systemMs * 1000) / outcomes,
        gatewayBusy: gatewayCpu === null ? null : gatewayCpu.totalMs / wallMs,
        machineBusy: busyCoresBetween(machineBefore, machineAfter),
      };
      if (setup.local !== undefined) return figures;
      const gatewayCalls = (stats: Map<string, number>) =>
        new Map([...stats].filter(([command]) => !REPLICATION_COMMANDS.has(command)));
      const nodeCpuMs = redisAfter.cpuMs.map(
        (after, node) => after - (redisBefore.cpuMs[node] ?? Number.NaN),
      );
      const redisCpuMs = nodeCpuMs.reduce((a, b) => a + b, 0);
      return {
        ...figures,
        redisCalls: callsPerCycle(gatewayCalls(redisBefore.calls), gatewayCalls(redisAfter.calls), outcomes),
        redisCpuUsPerMessage: (redisCpuMs * 1000) / outcomes,
        redisBusy: redisCpuMs / wallMs,
        busiestNodeBusy: Math.max(...nodeCpuMs) / wallMs,
        ...(nodeCpuMs.length > 1 && {
          nodeShares: nodeCpuMs.map((ms) => ms / redisCpuMs).sort((a, b) => b - a),
        }),
      };
    } finally {
      await running.stop();
    }
  }

  try {
    for (let round = 0; round < SETTINGS.httpRounds; round++) {
      for (const setup of SETUPS) {
        const measured = await measureSetup(setup);
        rounds.get(setup.id)?.push(measured);
        const redisPart =
          measured.redisCalls === undefined
            ? ''
            : `, ${formatNumber(total(measured.redisCalls))} Redis calls/msg (${formatNumber(measured.redisCalls.evalsha ?? 0)} EVALSHA, ${formatNumber(measured.redisCalls.wait ?? 0)} WAIT), Redis CPU ${percent(measured.redisBusy)}`;
        const sharesPart =
          measured.nodeShares === undefined ? '' : ` (nodes ${measured.nodeShares.map(percent).join(' / ')})`;
        progress(
          `round ${round + 1} · ${setup.id}: ${formatNumber(measured.messagesPerS)} msg/s, p50 ${measured.p50Ms} ms, p99 ${measured.p99Ms} ms, gateways' CPU ${percent(measured.gatewayBusy)}${redisPart}${sharesPart}, machine ${percent(measured.machineBusy)} of ${CORES * 100}%`,
        );
      }
    }
  } finally {
    for (const node of [admin, ...clusterNodes]) node.disconnect();
    await cluster.remove();
    await redisReplica.remove();
    await redis.remove();
    rmSync(dir, { recursive: true, force: true });
  }

  const best = new Map(
    SETUPS.map((setup) => [
      setup.id,
      (rounds.get(setup.id) ?? []).reduce((a, b) => (b.messagesPerS > a.messagesPerS ? b : a)),
    ]),
  );
  const figuresOf = (setup: Setup) => best.get(setup.id) as RoundFigures;
  const baseline = figuresOf(SQLITE_BASELINE);
  const connections = `${SETTINGS.httpConnections} connections`;
  const measurements: Measurement[] = [];
  for (const setup of SETUPS) {
    const f = figuresOf(setup);
    measurements.push(
      { metric: `${setup.id} · ${connections} · throughput`, value: f.messagesPerS, unit: 'msg/s' },
      { metric: `${setup.id} · ${connections} · p50`, value: f.p50Ms, unit: 'ms' },
      { metric: `${setup.id} · ${connections} · p99`, value: f.p99Ms, unit: 'ms' },
    );
    if (f.gatewayCpuUsPerMessage !== null) {
      measurements.push({
        metric: `${setup.id} · gateway CPU per message (all replicas)`,
        value: f.gatewayCpuUsPerMessage,
        unit: 'µs',
      });
    }
    if (f.gatewaySystemUsPerMessage !== null) {
      measurements.push({
        metric: `${setup.id} · of it in the kernel (system calls)`,
        value: f.gatewaySystemUsPerMessage,
        unit: 'µs',
      });
    }
    if (f.gatewayBusy !== null) {
      measurements.push({
        metric: `${setup.id} · gateway CPU busy (all replicas)`,
        value: f.gatewayBusy * 100,
        unit: '%',
      });
    }
    if (f.machineBusy !== null) {
      measurements.push({
        metric: `${setup.id} · machine CPU busy (every process, of ${CORES * 100}%)`,
        value: f.machineBusy * 100,
        unit: '%',
      });
    }
    if (setup.local !== undefined) continue;
    const calls = f.redisCalls ?? {};
    measurements.push(
      {
        metric: `${setup.id} ÷ ${SQLITE_BASELINE.id}`,
        value: f.messagesPerS / baseline.messagesPerS,
        unit: '×',
      },
      { metric: `${setup.id} · Redis calls per message`, value: total(calls), unit: 'calls' },
      { metric: `${setup.id} · Redis evalsha per message`, value: calls.evalsha ?? 0, unit: 'calls' },
      { metric: `${setup.id} · Redis PUBLISH per message`, value: calls.publish ?? 0, unit: 'calls' },
      { metric: `${setup.id} · Redis WAIT per message`, value: calls.wait ?? 0, unit: 'calls' },
      { metric: `${setup.id} · Redis CPU per message`, value: f.redisCpuUsPerMessage ?? 0, unit: 'µs' },
      { metric: `${setup.id} · Redis CPU busy`, value: (f.redisBusy ?? 0) * 100, unit: '%' },
    );
    if (f.nodeShares === undefined) continue;
    measurements.push(
      {
        metric: `${setup.id} · Redis CPU busy · busiest node`,
        value: (f.busiestNodeBusy ?? 0) * 100,
        unit: '%',
      },
      ...f.nodeShares.map((share, rank) => ({
        metric: `${setup.id} · share of the cluster's Redis CPU · node ${rank + 1} (busiest first)`,
        value: share * 100,
        unit: '%',
      })),
    );
  }
  /** The shared setup with this fsync policy and replica count. */
  const shared = (appendfsync: 'always' | 'everysec', replicas: Setup['replicas']) =>
    figuresOf(SHARED_SETUPS.find((s) => s.appendfsync === appendfsync && s.replicas === replicas) as Setup);
  for (const appendfsync of ['always', 'everysec'] as const) {
    for (const replicas of [3, 5] as const) {
      measurements.push({
        metric: `redis ${appendfsync} · ${replicas} replicas ÷ 1 replica · throughput`,
        value: shared(appendfsync, replicas).messagesPerS / shared(appendfsync, 1).messagesPerS,
        unit: '×',
      });
    }
  }
  for (const replicas of REPLICA_COUNTS) {
    measurements.push({
      metric: `redis everysec ÷ always · ${replicas} replica${replicas === 1 ? '' : 's'} · throughput`,
      value: shared('everysec', replicas).messagesPerS / shared('always', replicas).messagesPerS,
      unit: '×',
    });
  }
  measurements.push({
    metric: 'redis always · 1 replica · wait_replicas 1 ÷ 0 · throughput',
    value: figuresOf(WAITING_SETUP).messagesPerS / shared('always', 1).messagesPerS,
    unit: '×',
  });
  /** The cluster setup with this partition count and replica count. */
  const onCluster = (clusterPartitions: 1 | 12, replicas: Setup['replicas']) =>
    figuresOf(
      CLUSTER_SETUPS.find(
        (s) => s.clusterPartitions === clusterPartitions && s.replicas === replicas,
      ) as Setup,
    );
  for (const replicas of CLUSTER_REPLICA_COUNTS) {
    measurements.push({
      metric: `redis cluster · partitions 12 ÷ 1 · ${replicas} replica${replicas === 1 ? '' : 's'} · throughput`,
      value: onCluster(12, replicas).messagesPerS / onCluster(1, replicas).messagesPerS,
      unit: '×',
    });
  }
  const bounds = Object.fromEntries(
    ([1, 12] as const).map((partitions) => [
      `partitions ${partitions} · 3 replicas`,
      boundOf(onCluster(partitions, 3), 3),
    ]),
  );
  for (const [setup, bound] of Object.entries(bounds)) progress(`redis cluster · ${setup}: ${bound}`);
  const spread = onCluster(12, 3).messagesPerS / onCluster(1, 3).messagesPerS;
  return {
    measurements,
    targets: [
      ...fleetTargets(baseline, shared),
      {
        target: 'redis cluster · 3 shards (partitions 12) ÷ 1 shard (partitions 1) · 3 replicas · msg/s',
        expected: '≥ 2.2×',
        actual: `${formatNumber(spread)}×`,
        pass: spread >= 2.2,
      },
    ],
    details: {
      rounds: Object.fromEntries(rounds),
      connections: SETTINGS.httpConnections,
      durationS: SETTINGS.httpDurationS,
      redis:
        'private redis-server, appendonly yes, no RDB, appendfsync as the setup names; replicated throughout by a private redis-server without persistence',
      redisCluster:
        'private Redis Cluster of 3 primaries on this machine, no replicas, no persistence (no AOF, no RDB); Redis figures summed over the nodes',
      bounds,
      sessions: 'a new session_id per request',
    },
  };
});

function total(calls: Record<string, number>): number {
  return Object.values(calls).reduce((a, b) => a + b, 0);
}

/** A CPU time ÷ wall time as a percentage of one core; `—` without procfs. */
function percent(busy: number | null | undefined): string {
  return busy === null || busy === undefined ? '—' : `${formatNumber(busy * 100)}%`;
}

/**
 * Which side bounded a run, the one nearer its ceiling: the gateways' CPU against the cores they
 * could use (a main thread each, at most the machine's cores), or the busiest Redis node's against
 * its one main thread. Neither near it: the machine's cores when they were busy, else none of these.
 */
function boundOf(f: RoundFigures, replicas: number): string {
  const gatewayCores = Math.min(replicas, CORES);
  const gateways = (f.gatewayBusy ?? Number.NaN) / gatewayCores;
  const redis = f.busiestNodeBusy ?? Number.NaN;
  const machine = (f.machineBusy ?? Number.NaN) / CORES;
  const side =
    Math.max(gateways, redis) >= SATURATED
      ? gateways >= redis
        ? 'the gateways'
        : 'the busiest Redis node'
      : machine >= SATURATED
        ? "neither side at its ceiling: the machine's shared cores"
        : 'neither side nor the machine at its ceiling';
  return `bound by ${side}: the gateways used ${percent(f.gatewayBusy)} CPU (${percent(gateways)} of the ${gatewayCores} cores they could use), the busiest Redis node ${percent(redis)} of its one thread, Redis in all ${percent(f.redisBusy)}; machine: ${CORES} cores, ${percent(f.machineBusy)} of ${CORES * 100}% busy`;
}

/**
 * The fleet's targets (docs/BENCHMARKS.md "Targets"), judged on the `everysec` setups, where
 * Redis' fsync does not bound the throughput: the whole fleet's CPU per message (the replicas'
 * and Redis', summed) against one SQLite gateway's in the same run, not growing with the replica
 * count; Redis' own cost per message; and `always` at one replica against its figure before the
 * scripts were merged.
 */
function fleetTargets(
  sqlite: RoundFigures,
  shared: (appendfsync: 'always' | 'everysec', replicas: Setup['replicas']) => RoundFigures,
): TargetCheck[] {
  const fleetCpu = (f: RoundFigures) =>
    (f.gatewayCpuUsPerMessage ?? Number.NaN) + (f.redisCpuUsPerMessage ?? 0);
  const targets: TargetCheck[] = [];
  for (const replicas of REPLICA_COUNTS) {
    const f = shared('everysec', replicas);
    const ratio = fleetCpu(f) / (sqlite.gatewayCpuUsPerMessage ?? Number.NaN);
    targets.push({
      target: `fleet CPU per message ÷ one SQLite gateway's · ${replicas} replica${replicas === 1 ? '' : 's'}`,
      expected: '≤ 2×',
      actual: `${formatNumber(ratio)}×`,
      pass: ratio <= 2,
    });
  }
  const one = shared('everysec', 1);
  const calls = one.redisCalls ?? {};
  targets.push(
    {
      target: 'Redis CPU per message · 1 replica',
      expected: '≤ 150 µs',
      actual: `${formatNumber(one.redisCpuUsPerMessage ?? Number.NaN)} µs`,
      pass: (one.redisCpuUsPerMessage ?? Number.POSITIVE_INFINITY) <= 150,
    },
    {
      target: 'Redis commands per message · 1 replica',
      expected: '≤ 30',
      actual: formatNumber(total(calls)),
      pass: total(calls) <= 30,
    },
    {
      target: 'script round trips per message · 1 replica',
      expected: '≤ 3',
      actual: formatNumber(calls.evalsha ?? Number.NaN),
      pass: (calls.evalsha ?? Number.POSITIVE_INFINITY) <= 3,
    },
  );
  for (const replicas of [3, 5] as const) {
    const ratio = fleetCpu(shared('everysec', replicas)) / fleetCpu(one);
    targets.push({
      target: `fleet CPU per message · ${replicas} replicas ÷ 1`,
      expected: '≤ 1.2× (does not grow with replicas)',
      actual: `${formatNumber(ratio)}×`,
      pass: ratio <= 1.2,
    });
  }
  const always = shared('always', 1).messagesPerS / ALWAYS_ONE_REPLICA_BEFORE_MSG_S;
  targets.push({
    target: `redis always · 1 replica ÷ ${ALWAYS_ONE_REPLICA_BEFORE_MSG_S} msg/s (2026-12-04)`,
    expected: '≥ 5×',
    actual: `${formatNumber(always)}×`,
    pass: always >= 5,
  });
  return targets;
}
