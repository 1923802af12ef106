/**
 * The knobs of a run, read once from the environment. Defaults are the full run that
 * docs/BENCHMARKS.md reports; `BENCH_QUICK=1` is a smoke run of a minute or two.
 */
function positiveNumber(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0)
    throw new Error(`${name}: expected a positive number, got "${raw}"`);
  return value;
}

function text(name: string): string {
  return process.env[name] ?? '';
}

function flag(name: string): boolean {
  return process.env[name] === '1';
}

const quick = flag('BENCH_QUICK');

export const SETTINGS = {
  quick,
  /** Timed runs per scheduler and workload; the fastest is reported (the machine is shared). */
  schedulerRuns: positiveNumber('BENCH_SCHEDULER_RUNS', quick ? 1 : 3),
  /** Length of each measured HTTP run, in seconds. */
  httpDurationS: positiveNumber('BENCH_HTTP_DURATION_S', quick ? 3 : 10),
  /** Length of the warm-up before each measured HTTP run, in seconds. */
  httpWarmupS: positiveNumber('BENCH_HTTP_WARMUP_S', quick ? 1 : 3),
  /**
   * Messages each gateway of `cluster-throughput` accepts, one gateway loaded at a time, before
   * its setup's measured run: V8 keeps optimizing a gateway's code over its first ~10k messages
   * (its CPU per message falls ~2.5× meanwhile), which a time-based warm-up would leave to the
   * slower setups' measured runs.
   */
  replicaWarmupMessages: positiveNumber('BENCH_REPLICA_WARMUP_MESSAGES', quick ? 5000 : 10_000),
  /** Replicas of `bench/command-log.ts`. */
  logReplicas: positiveNumber('BENCH_LOG_REPLICAS', 1),
  /** Rounds over all HTTP servers, alternating them; each server's best round is reported. */
  httpRounds: positiveNumber('BENCH_HTTP_ROUNDS', quick ? 1 : 2),
  /** Concurrent connections of the loaded HTTP runs. */
  httpConnections: positiveNumber('BENCH_HTTP_CONNECTIONS', 50),
  /** Sequential requests of the light-load HTTP latency runs. */
  httpLightRequests: positiveNumber('BENCH_HTTP_LIGHT_REQUESTS', quick ? 1000 : 5000),
  /** Messages timed one at a time by the in-process latency run. */
  latencyMessages: positiveNumber('BENCH_LATENCY_MESSAGES', quick ? 5000 : 20_000),
  /** Distinct sessions served once by the memory run. */
  memorySessions: positiveNumber('BENCH_MEMORY_SESSIONS', quick ? 100_000 : 1_000_000),
  /** Timed runs per pool and replica count in `pool-claims`; the fastest is reported. */
  poolRuns: positiveNumber('BENCH_POOL_RUNS', quick ? 1 : 3),
  /** enqueue → claim → complete cycles per Redis run of `pool-claims` (the memory pool runs 10×). */
  poolMessages: positiveNumber('BENCH_POOL_MESSAGES', quick ? 1000 : 3000),
  /** Cycles in flight per pool in `pool-claims`. */
  poolConcurrency: positiveNumber('BENCH_POOL_CONCURRENCY', 8),
  /** Calls of each script `pool-script-costs` measures. */
  scriptCalls: positiveNumber('BENCH_SCRIPT_CALLS', quick ? 300 : 1000),
  /** The Redis `pool-claims` and `pool-script-costs` run against; they work on a random prefix and remove it. */
  redisUrl: text('BENCH_REDIS_URL') || 'redis://127.0.0.1:6379',
  /** The PostgreSQL `cluster-throughput` gives its replicas; it works in a random schema and drops it. */
  postgresUrl: text('BENCH_POSTGRES_URL') || 'postgres://postgres@127.0.0.1:5432/test',
  /** Another build of the SQLite store for `outbox-drain` (its `dist/index.js`); empty: this one. */
  outboxStore: text('BENCH_OUTBOX_STORE'),
  /** Tenants generated into `tenants_dir` by `tenants-scale`. */
  tenants: positiveNumber('BENCH_TENANTS', 1000),
  /** Starts per gateway in `tenants-scale`; the fastest start is reported. */
  tenantRounds: positiveNumber('BENCH_TENANT_ROUNDS', quick ? 1 : 3),
  /** Seconds each setup of `tenants-noisy-neighbour` runs. */
  noisyDurationS: positiveNumber('BENCH_NOISY_DURATION_S', quick ? 3 : 10),
  /** Rounds over the setups of `tenants-noisy-neighbour` (each setup's best p99 counts). */
  noisyRounds: positiveNumber('BENCH_NOISY_ROUNDS', quick ? 1 : 3),
  /** Tenant A's turn in `tenants-noisy-neighbour`, ms. */
  noisySlowMs: positiveNumber('BENCH_NOISY_SLOW_MS', 200),
  /** Tenant B's turn in `tenants-noisy-neighbour`, ms. */
  noisyQuickMs: positiveNumber('BENCH_NOISY_QUICK_MS', 20),
  /** Tenant B's steady messages per second in `tenants-noisy-neighbour`. */
  noisyRatePerS: positiveNumber('BENCH_NOISY_RATE', 50),
  /** Adds --cpu-prof to every scenario process and to the gateway; profiles land in bench/results/. */
  cpuProfile: flag('BENCH_CPU_PROF'),
  /** Comma-separated scenario names to run instead of all (bench/run.ts). */
  only: text('BENCH_ONLY'),
} as const;

/**
 * Runs full garbage collections; the memory figures need `node --expose-gc`. Memory figures ask
 * for several passes: weak references and finalizers free more on the second and third.
 */
export function collectGarbage(passes = 1): void {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc === undefined) throw new Error('run with node --expose-gc (npm run bench does)');
  for (let pass = 0; pass < passes; pass++) gc();
}
