/**
 * Runs every benchmark scenario, each in a fresh process (so one scenario's heap and JIT state
 * cannot colour the next), prints one table of figures and one of targets, and writes everything
 * with the machine's description to bench/results/<timestamp>.json.
 *
 *   npm run bench                          # the full run (builds first)
 *   BENCH_QUICK=1 npm run bench            # a smoke run
 *   BENCH_ONLY=http-throughput npm run bench
 *
 * See bench/README.md for every setting.
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import {
  type ScenarioReport,
  type TargetCheck,
  formatTable,
  measurementRows,
  targetRows,
} from './support/report.js';
import { SETTINGS } from './support/settings.js';

/**
 * In the order they run: in-process scenarios first, then the one against Redis, the HTTP ones
 * (several processes) last.
 */
const SCENARIOS = [
  'scheduler-throughput',
  'scheduler-backlog',
  'scheduler-latency',
  'memory-pending',
  'memory-sessions',
  'tenants-noisy-neighbour',
  'outbox-drain',
  'pool-claims',
  'http-throughput',
  'cluster-throughput',
  'tenants-scale',
  'console-recorders',
] as const;

const RESULTS_DIR = fileURLToPath(new URL('./results', import.meta.url));
const PROFILE_DIR = fileURLToPath(new URL('./results/profiles', import.meta.url));

function selectedScenarios(): readonly string[] {
  if (SETTINGS.only === '') return SCENARIOS;
  const wanted = SETTINGS.only.split(',').map((name) => name.trim());
  const unknown = wanted.filter((name) => !(SCENARIOS as readonly string[]).includes(name));
  if (unknown.length > 0)
    throw new Error(`BENCH_ONLY: unknown scenario(s) ${unknown.join(', ')}; known: ${SCENARIOS.join(', ')}`);
  return SCENARIOS.filter((name) => wanted.includes(name));
}

/** Runs `bench/<scenario>.ts` with this process's node flags; resolves its report, or the failure. */
function runScenarioProcess(scenario: string): Promise<ScenarioReport | { scenario: string; error: string }> {
  const file = fileURLToPath(new URL(`./${scenario}.ts`, import.meta.url));
  const profile = SETTINGS.cpuProfile ? ['--cpu-prof', `--cpu-prof-dir=${PROFILE_DIR}`] : [];
  const child = spawn(process.execPath, [...process.execArgv, ...profile, file], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let stdout = '';
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  return new Promise((resolve) => {
    child.once('exit', (code) => {
      const last = stdout.trim().split('\n').pop() ?? '';
      if (code === 0) {
        try {
          resolve(JSON.parse(last) as ScenarioReport);
          return;
        } catch {}
      }
      resolve({ scenario, error: `exited with ${code}` });
    });
  });
}

function git(args: string[]): string {
  try {
    return execFileSync('git', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return 'unknown';
  }
}

function machine() {
  const cpus = os.cpus();
  return {
    cpuModel: cpus[0]?.model ?? 'unknown',
    cpus: cpus.length,
    memoryGb: Math.round(os.totalmem() / 1024 ** 3),
    node: process.version,
    platform: `${os.platform()} ${os.release()}`,
    loadAverage: os.loadavg(),
  };
}

const startedAt = new Date();
const before = machine();
process.stderr.write(
  `Switchboard benchmarks · ${before.cpuModel} × ${before.cpus} · ${before.memoryGb} GB · node ${before.node} · load ${before.loadAverage.map((l) => l.toFixed(2)).join(' ')}${SETTINGS.quick ? ' · QUICK' : ''}\n`,
);

const reports: ScenarioReport[] = [];
const failures: Array<{ scenario: string; error: string }> = [];
for (const scenario of selectedScenarios()) {
  process.stderr.write(`\n== ${scenario}\n`);
  const outcome = await runScenarioProcess(scenario);
  if ('error' in outcome) failures.push(outcome);
  else reports.push(outcome);
}

const targets: TargetCheck[] = reports.flatMap((report) => report.targets);
process.stdout.write(
  `\n${formatTable(['scenario', 'metric', 'value', 'unit'], reports.flatMap(measurementRows))}\n`,
);
process.stdout.write(`\n${formatTable(['target', 'expected', 'actual', ''], targetRows(targets))}\n`);
for (const failure of failures) process.stdout.write(`\n${failure.scenario} FAILED: ${failure.error}\n`);

mkdirSync(RESULTS_DIR, { recursive: true });
const resultsFile = `${RESULTS_DIR}/${startedAt.toISOString().replaceAll(':', '-')}.json`;
writeFileSync(
  resultsFile,
  `${JSON.stringify(
    {
      startedAt: startedAt.toISOString(),
      finishedAt: new Date().toISOString(),
      commit: git(['rev-parse', 'HEAD']),
      uncommittedChanges: git(['status', '--porcelain']) !== '',
      machine: { ...before, loadAverageAtEnd: os.loadavg() },
      settings: SETTINGS,
      reports,
      failures,
    },
    null,
    2,
  )}\n`,
);
process.stdout.write(
  `\n${targets.filter((t) => t.pass).length} of ${targets.length} targets met · results: ${resultsFile}\n`,
);
process.exitCode = failures.length > 0 ? 1 : 0;
