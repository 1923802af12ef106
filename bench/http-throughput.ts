/**
 * The HTTP path: autocannon against `POST /v1/messages` (wait=true, echo pipeline) of the real
 * gateway — the built CLI in its own process, once with `store: memory` and once with the
 * default SQLite journal — and against a bare fastify route in the same kind of process that
 * returns the same body. Every request carries a new session_id, so per-session ordering never
 * makes a request wait for another and the figures show the cost of the path itself.
 *
 * Loaded runs: SETTINGS.httpConnections connections for SETTINGS.httpDurationS seconds after a
 * warm-up, in SETTINGS.httpRounds rounds that alternate the servers; each server's best round
 * counts (the machine is shared, and the best round is the least disturbed). Light load: SETTINGS.httpLightRequests requests one at a time over one keep-alive
 * connection, timed by the client with sub-millisecond resolution (autocannon rounds latencies
 * to whole milliseconds); gateway p50 − bare p50 is the latency the gateway adds per turn.
 *
 * Tracing: the `store: memory` gateway runs once more with `telemetry.traces` pointed at a sink
 * in this process that accepts every OTLP export (answering 200) and drops it; traced − untraced
 * server CPU per request is what tracing costs per message (docs/BENCHMARKS.md#tracing).
 *
 * SQLite: the gateway's `/metrics` counts the commits and statements run on its file
 * (`switchboard_store_*_total`), read before and after the loaded run and the light one:
 * commits/message and statements/message, batched by the group commit under load, and one
 * message at a time (the steady path of one message).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadMessages, postNewSession } from './support/http-load.js';
import { cpuTimeMs } from './support/process-cpu.js';
import { type Measurement, type TargetCheck, formatNumber, progress, runScenario } from './support/report.js';
import { startGateway } from './support/gateway-process.js';
import { type ServerProcess, startServerProcess } from './support/server-process.js';
import { SETTINGS } from './support/settings.js';
import { summarize } from './support/stats.js';
import { type StoreCounts, perMessage, storeCountsAt } from './support/store-counts.js';

const BARE_SERVER = fileURLToPath(new URL('./bare-fastify-server.mjs', import.meta.url));

interface Server {
  /** Whether its `/metrics` counts the SQLite file's commits and statements. */
  countsStore?: boolean;
  id:
    | 'bare fastify'
    | 'gateway · store memory'
    | 'gateway · store sqlite'
    | 'gateway · store memory · traced';
  start(dir: string): Promise<ServerProcess>;
  /** Required share of the bare server's requests/s. */
  minShareOfBare?: number;
}

/** The gateway's stores by server: the journal in memory or in a SQLite file. */
function storesOf(store: 'memory' | 'sqlite', dir: string) {
  return store === 'memory'
    ? { name: store, store: '{ kind: memory }' }
    : { name: store, store: `{ kind: sqlite, path: ${JSON.stringify(join(dir, 'switchboard.db'))} }` };
}

/** The `store: memory` gateway exporting its traces to a sink that accepts and drops them. */
async function startTracedGateway(dir: string): Promise<ServerProcess> {
  const sink = createServer((req, res) => {
    req.resume();
    req.once('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
  });
  await new Promise<void>((resolve) => sink.listen(0, '127.0.0.1', resolve));
  const closeSink = () => new Promise<void>((resolve) => sink.close(() => resolve()));
  const { port } = sink.address() as AddressInfo;
  try {
    const traced = { ...storesOf('memory', dir), name: 'memory-traced' };
    const gateway = await startGateway(
      { ...traced, telemetry: `{ traces: { endpoint: "http://127.0.0.1:${port}/v1/traces" } }` },
      dir,
    );
    return { ...gateway, stop: () => gateway.stop().finally(closeSink) };
  } catch (error) {
    await closeSink();
    throw error;
  }
}

const SERVERS: readonly Server[] = [
  { id: 'bare fastify', start: () => startServerProcess([BARE_SERVER]) },
  {
    id: 'gateway · store memory',
    start: (dir) => startGateway(storesOf('memory', dir), dir),
    minShareOfBare: 0.6,
  },
  {
    id: 'gateway · store sqlite',
    countsStore: true,
    start: (dir) => startGateway(storesOf('sqlite', dir), dir),
    minShareOfBare: 0.4,
  },
  { id: 'gateway · store memory · traced', start: startTracedGateway },
];

/** Milliseconds per request, one request at a time over one keep-alive connection. */
async function sequentialLatenciesMs(url: string, count: number): Promise<number[]> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const latencies: number[] = [];
  try {
    for (let i = 0; i < count; i++) {
      const startedAt = performance.now();
      const status = await postNewSession(agent, `${url}/v1/messages`);
      if (status !== 200) throw new Error(`${url}: answered ${status} at light load`);
      latencies.push(performance.now() - startedAt);
    }
  } finally {
    agent.destroy();
  }
  return latencies;
}

interface ServerFigures {
  requestsPerS: number;
  /** Server CPU per request during the loaded run, µs; null without procfs. */
  cpuUsPerRequest: number | null;
  /** Server CPU time ÷ wall time of the loaded run; null without procfs. */
  cpuBusy: number | null;
  p50Ms: number;
  p99Ms: number;
  lightP50Ms: number;
  lightP99Ms: number;
  /** SQLite commits and statements per message, loaded and one at a time; null without a file. */
  storeLoaded: StoreCounts | null;
  storeLight: StoreCounts | null;
}

async function measureServer(server: Server, dir: string): Promise<ServerFigures> {
  const running = await server.start(dir);
  try {
    await loadMessages(running.url, { durationS: SETTINGS.httpWarmupS }, SETTINGS.httpConnections);
    // Read between the runs, outside the CPU and wall time measured.
    const counts = () => (server.countsStore === true ? storeCountsAt(running.url) : null);
    const countsBefore = await counts();
    const cpuBefore = cpuTimeMs(running.child.pid);
    const startedAt = performance.now();
    const loaded = await loadMessages(
      running.url,
      { durationS: SETTINGS.httpDurationS },
      SETTINGS.httpConnections,
    );
    const wallMs = performance.now() - startedAt;
    const cpuAfter = cpuTimeMs(running.child.pid);
    const cpuMs = cpuBefore === null || cpuAfter === null ? null : cpuAfter - cpuBefore;
    const countsLoaded = await counts();
    // Warm the single connection's path too before timing it.
    await sequentialLatenciesMs(running.url, 200);
    const countsWarm = await counts();
    const light = summarize(await sequentialLatenciesMs(running.url, SETTINGS.httpLightRequests));
    const countsLight = await counts();
    return {
      requestsPerS: loaded.requests.average,
      cpuUsPerRequest: cpuMs === null ? null : (cpuMs * 1000) / loaded.requests.total,
      cpuBusy: cpuMs === null ? null : cpuMs / wallMs,
      p50Ms: loaded.latency.p50,
      p99Ms: loaded.latency.p99,
      lightP50Ms: light.p50,
      lightP99Ms: light.p99,
      storeLoaded:
        countsBefore === null || countsLoaded === null
          ? null
          : perMessage(countsBefore, countsLoaded, loaded.requests.total),
      storeLight:
        countsWarm === null || countsLight === null
          ? null
          : perMessage(countsWarm, countsLight, SETTINGS.httpLightRequests),
    };
  } finally {
    await running.stop();
  }
}

/** Commits/message and statements/message of one run, when the server counts them. */
function storeMeasurements(id: Server['id'], load: string, counts: StoreCounts | null): Measurement[] {
  if (counts === null) return [];
  return [
    { metric: `${id} · ${load} · SQLite commits`, value: counts.commits, unit: 'commits/message' },
    { metric: `${id} · ${load} · SQLite statements`, value: counts.statements, unit: 'statements/message' },
  ];
}

/** The loaded figures of the round with the most requests/s, the light-load ones of the quickest. */
function best(rounds: readonly ServerFigures[]): ServerFigures {
  const loaded = rounds.reduce((a, b) => (b.requestsPerS > a.requestsPerS ? b : a));
  const light = rounds.reduce((a, b) => (b.lightP50Ms < a.lightP50Ms ? b : a));
  return {
    ...loaded,
    lightP50Ms: light.lightP50Ms,
    lightP99Ms: light.lightP99Ms,
    storeLight: light.storeLight,
  };
}

await runScenario('http-throughput', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'switchboard-bench-'));
  const rounds = new Map<Server['id'], ServerFigures[]>(SERVERS.map((server) => [server.id, []]));
  try {
    for (let round = 0; round < SETTINGS.httpRounds; round++) {
      for (const server of SERVERS) {
        const measured = await measureServer(server, dir);
        rounds.get(server.id)?.push(measured);
        progress(
          `round ${round + 1} · ${server.id}: ${formatNumber(measured.requestsPerS)} req/s, p50 ${measured.p50Ms} ms, p99 ${measured.p99Ms} ms; one at a time p50 ${formatNumber(measured.lightP50Ms)} ms`,
        );
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const figures = Object.fromEntries(
    SERVERS.map((server) => [server.id, best(rounds.get(server.id) ?? [])]),
  ) as Record<Server['id'], ServerFigures>;

  const bare = figures['bare fastify'];
  const measurements: Measurement[] = [];
  const targets: TargetCheck[] = [];
  for (const server of SERVERS) {
    const f = figures[server.id];
    measurements.push(
      {
        metric: `${server.id} · ${SETTINGS.httpConnections} connections · throughput`,
        value: f.requestsPerS,
        unit: 'req/s',
      },
      { metric: `${server.id} · ${SETTINGS.httpConnections} connections · p50`, value: f.p50Ms, unit: 'ms' },
      { metric: `${server.id} · ${SETTINGS.httpConnections} connections · p99`, value: f.p99Ms, unit: 'ms' },
      ...(f.cpuUsPerRequest === null || f.cpuBusy === null
        ? []
        : [
            {
              metric: `${server.id} · ${SETTINGS.httpConnections} connections · server CPU per request`,
              value: f.cpuUsPerRequest,
              unit: 'µs',
            },
            {
              metric: `${server.id} · ${SETTINGS.httpConnections} connections · server CPU busy`,
              value: f.cpuBusy * 100,
              unit: '%',
            },
          ]),
      { metric: `${server.id} · 1 request at a time · p50`, value: f.lightP50Ms, unit: 'ms' },
      { metric: `${server.id} · 1 request at a time · p99`, value: f.lightP99Ms, unit: 'ms' },
      ...storeMeasurements(server.id, `${SETTINGS.httpConnections} connections`, f.storeLoaded),
      ...storeMeasurements(server.id, '1 request at a time', f.storeLight),
    );
    if (f.storeLight !== null) {
      // The steady path of one message: its acceptance, and one commit ending it.
      targets.push({
        target: `SQLite commits per message one at a time, ${server.id}`,
        expected: '≤ 2',
        actual: formatNumber(f.storeLight.commits),
        pass: f.storeLight.commits <= 2,
      });
    }
    if (server.minShareOfBare === undefined) continue;
    const share = f.requestsPerS / bare.requestsPerS;
    const addedMs = f.lightP50Ms - bare.lightP50Ms;
    measurements.push(
      { metric: `${server.id} ÷ bare fastify · throughput`, value: share * 100, unit: '%' },
      { metric: `${server.id} − bare fastify · added latency p50`, value: addedMs, unit: 'ms' },
    );
    targets.push(
      {
        target: `HTTP req/s, ${server.id} vs bare fastify`,
        expected: `≥ ${server.minShareOfBare * 100}%`,
        actual: `${formatNumber(share * 100)}%`,
        pass: share >= server.minShareOfBare,
      },
      {
        target: `added latency per turn p50 over HTTP, ${server.id}`,
        expected: '< 2 ms',
        actual: `${formatNumber(addedMs)} ms`,
        pass: addedMs < 2,
      },
    );
  }
  const untraced = figures['gateway · store memory'].cpuUsPerRequest;
  const traced = figures['gateway · store memory · traced'].cpuUsPerRequest;
  if (untraced !== null && traced !== null) {
    measurements.push({
      metric: 'tracing on − off · server CPU per request',
      value: traced - untraced,
      unit: 'µs',
    });
  }
  return {
    measurements,
    targets,
    details: {
      rounds: Object.fromEntries(rounds),
      connections: SETTINGS.httpConnections,
      durationS: SETTINGS.httpDurationS,
      sessions: 'a new session_id per request',
    },
  };
});
