/**
 * Many tenants on one gateway: the built `switchboard serve` with SETTINGS.tenants tenants from a
 * generated `tenants_dir` (one file each: an HTTP channel at /t<i>, an echo pipeline, a routing
 * of three content rules and a default), beside the same gateway with the default tenant alone
 * (its baseline in the same run). Each starts from a fresh SQLite folder.
 *
 * Start-up: wall time from spawn to the `listening` log line, the fastest of
 * SETTINGS.tenantRounds starts per gateway (the machine is shared). Idle RSS: the process' VmRSS
 * once it has answered one message per tenant it routes for (the first and the last), read after
 * the light runs. Routing: one request at a time over one keep-alive connection, alternating the
 * first tenant's channel and the last one's (SETTINGS.httpLightRequests each), p50 and p99: a
 * tenant's routing is found by its id, so the last of 1,000 should route as fast as the first.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Agent } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { postNewSession } from './support/http-load.js';
import { type Measurement, type TargetCheck, formatNumber, progress, runScenario } from './support/report.js';
import { type ServerProcess, startServerProcess } from './support/server-process.js';
import { SETTINGS } from './support/settings.js';
import { summarize } from './support/stats.js';

const GATEWAY_CLI = fileURLToPath(new URL('../apps/gateway/dist/cli.js', import.meta.url));

/** One tenant's file: its channel, pipeline and routing. */
function tenantFile(index: number): string {
  const id = `t${index}`;
  return [
    `id: ${id}`,
    `channels: [ { id: ${id}-api, type: openapi, prefix: /${id} } ]`,
    `pipelines: [ { id: ${id}-echo, type: echo } ]`,
    'routing:',
    `  default: ${id}-echo`,
    '  rules:',
    `    - { name: ${id}-ads, type: message_content, operator: contains, value: "buy now", pipeline: __discard__ }`,
    `    - { name: ${id}-spam, type: message_content, operator: contains, value: "free money", pipeline: __discard__ }`,
    `    - { name: ${id}-help, type: message_content, operator: starts_with, value: "/help", pipeline: ${id}-echo }`,
    '',
  ].join('\n');
}

/** A gateway folder: the main file, and `tenants/` with `tenants` files when there are any. */
function writeGateway(dir: string, tenants: number): string {
  const lines = [
    'server: { host: 127.0.0.1, port: 0 }',
    `store: { kind: sqlite, path: ${JSON.stringify(join(dir, 'switchboard.db'))} }`,
    'channels: [ { id: api, type: openapi, prefix: /v1 } ]',
    'pipelines: [ { id: echo, type: echo } ]',
    'routing: { default: echo }',
  ];
  if (tenants > 0) {
    const folder = join(dir, 'tenants');
    mkdirSync(folder);
    for (let index = 1; index <= tenants; index++)
      writeFileSync(join(folder, `t${String(index).padStart(5, '0')}.yaml`), tenantFile(index));
    lines.push(`tenants_dir: ${JSON.stringify(folder)}`);
  }
  const configPath = join(dir, 'switchboard.yaml');
  writeFileSync(configPath, `${lines.join('\n')}\n`);
  return configPath;
}

/** Starts the gateway of `dir` afresh (no database yet) and times it until it listens, ms. */
async function timedStart(
  dir: string,
  configPath: string,
): Promise<{ server: ServerProcess; startMs: number }> {
  rmSync(join(dir, 'switchboard.db'), { force: true });
  for (const suffix of ['-wal', '-shm']) rmSync(join(dir, `switchboard.db${suffix}`), { force: true });
  const startedAt = performance.now();
  const server = await startServerProcess([GATEWAY_CLI, 'serve', '-c', configPath], {
    cwd: dir,
    env: { LOG_LEVEL: 'info' },
  });
  return { server, startMs: performance.now() - startedAt };
}

/** Latencies of `count` requests to each of `paths`, one at a time, alternating them, ms. */
async function alternatingLatenciesMs(baseUrl: string, paths: readonly string[], count: number) {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const latencies = paths.map(() => [] as number[]);
  try {
    for (let i = 0; i < count; i++) {
      for (const [at, path] of paths.entries()) {
        const startedAt = performance.now();
        const status = await postNewSession(agent, `${baseUrl}${path}/messages`);
        if (status !== 200) throw new Error(`${path}/messages answered ${status}`);
        latencies[at]?.push(performance.now() - startedAt);
      }
    }
  } finally {
    agent.destroy();
  }
  return latencies.map(summarize);
}

/** The process' resident set, MB, from procfs. */
function rssMb(pid: number | undefined): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1]);
  if (!Number.isFinite(kb)) throw new Error(`no VmRSS for process ${pid}`);
  return kb / 1024;
}

interface GatewayFigures {
  startMs: number;
  rssMb: number;
  routes: Array<{ path: string; p50Ms: number; p99Ms: number }>;
}

async function measure(tenants: number): Promise<GatewayFigures> {
  const dir = mkdtempSync(join(tmpdir(), 'switchboard-bench-tenants-'));
  try {
    const configPath = writeGateway(dir, tenants);
    const paths = tenants > 0 ? ['/t1', `/t${tenants}`] : ['/v1'];
    let best: GatewayFigures | undefined;
    for (let round = 0; round < SETTINGS.tenantRounds; round++) {
      const { server, startMs } = await timedStart(dir, configPath);
      try {
        const latencies = await alternatingLatenciesMs(server.url, paths, SETTINGS.httpLightRequests);
        const figures: GatewayFigures = {
          startMs,
          rssMb: rssMb(server.child.pid),
          routes: paths.map((path, at) => ({
            path,
            p50Ms: latencies[at]?.p50 ?? Number.NaN,
            p99Ms: latencies[at]?.p99 ?? Number.NaN,
          })),
        };
        progress(
          `${tenants} tenants · round ${round + 1}: start ${formatNumber(startMs)} ms, RSS ${formatNumber(figures.rssMb)} MB, ${figures.routes
            .map((route) => `${route.path} p50 ${formatNumber(route.p50Ms)} ms`)
            .join(', ')}`,
        );
        if (best === undefined || startMs < best.startMs)
          best = { ...figures, rssMb: Math.min(figures.rssMb, best?.rssMb ?? figures.rssMb) };
      } finally {
        await server.stop();
      }
    }
    if (best === undefined) throw new Error('no round ran');
    return best;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await runScenario('tenants-scale', async () => {
  const baseline = await measure(0);
  const many = await measure(SETTINGS.tenants);
  const [first, last] = many.routes as [GatewayFigures['routes'][number], GatewayFigures['routes'][number]];
  const label = `${SETTINGS.tenants} tenants`;
  const measurements: Measurement[] = [
    { metric: 'default tenant alone · start to listening', value: baseline.startMs, unit: 'ms' },
    { metric: `${label} · start to listening`, value: many.startMs, unit: 'ms' },
    { metric: 'default tenant alone · RSS after serving', value: baseline.rssMb, unit: 'MB' },
    { metric: `${label} · RSS after serving`, value: many.rssMb, unit: 'MB' },
    {
      metric: `${label} · RSS per tenant`,
      value: ((many.rssMb - baseline.rssMb) * 1024) / SETTINGS.tenants,
      unit: 'KB',
    },
    {
      metric: 'default tenant alone · 1 request at a time · p50',
      value: baseline.routes[0]?.p50Ms ?? Number.NaN,
      unit: 'ms',
    },
    { metric: `${label} · first tenant · 1 request at a time · p50`, value: first.p50Ms, unit: 'ms' },
    { metric: `${label} · last tenant · 1 request at a time · p50`, value: last.p50Ms, unit: 'ms' },
    { metric: `${label} · first tenant · p99`, value: first.p99Ms, unit: 'ms' },
    { metric: `${label} · last tenant · p99`, value: last.p99Ms, unit: 'ms' },
  ];
  const lastOverFirst = last.p50Ms / first.p50Ms;
  const alone = baseline.routes[0]?.p50Ms ?? Number.NaN;
  const lastOverAlone = last.p50Ms / alone;
  const targets: TargetCheck[] = [
    {
      target: `${label}: the last tenant's p50 ÷ the default tenant alone`,
      expected: '≤ 1.1×',
      actual: `${formatNumber(lastOverAlone)}×`,
      pass: lastOverAlone <= 1.1,
    },
    {
      target: `${label}: the last tenant's p50 ÷ the first's`,
      expected: '≤ 1.1×',
      actual: `${formatNumber(lastOverFirst)}×`,
      pass: lastOverFirst <= 1.1,
    },
  ];
  return { measurements, targets, details: { baseline, many } };
});
