import { readFileSync, readdirSync } from 'node:fs';
import { scrapeMetrics } from '@switchboard/testkit/prometheus';

/** One reading of a running gateway's resources. */
export interface ResourceSample {
  /** Milliseconds since the sampler started. */
  atMs: number;
  rssBytes: number;
  /** V8 heap in use (from `/metrics` unless the source reads it otherwise); null when unknown. */
  heapBytes: number | null;
  openFds: number;
}

/** Resident set size of `pid` from /proc (Linux), in bytes. */
export function readRssBytes(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const match = /^VmRSS:\s+(\d+)\s+kB$/m.exec(status);
  if (match === null) throw new Error(`no VmRSS in /proc/${pid}/status`);
  return Number(match[1]) * 1024;
}

/** Open file descriptors of `pid` (sockets, the SQLite file and its WAL, pipes…). */
export function countOpenFds(pid: number): number {
  return readdirSync(`/proc/${pid}/fd`).length;
}

/** `nodejs_heap_size_used_bytes` from the gateway's metrics, whatever their prefix; null without it. */
export async function readHeapBytes(baseUrl: string): Promise<number | null> {
  const match = /^\w*nodejs_heap_size_used_bytes(?:\{[^}]*\})?\s+(\S+)$/m.exec(await scrapeMetrics(baseUrl));
  return match === null ? null : Number(match[1]);
}

/**
 * Least-squares slope of `value` over time, in units per minute: how fast a resource grows once
 * the process is warm. A flat process gives a slope near zero whatever its level.
 */
export function slopePerMinute(
  samples: readonly ResourceSample[],
  value: (s: ResourceSample) => number,
): number {
  if (samples.length < 2) return 0;
  const xs = samples.map((s) => s.atMs / 60_000);
  const ys = samples.map(value);
  const meanX = xs.reduce((a, b) => a + b, 0) / xs.length;
  const meanY = ys.reduce((a, b) => a + b, 0) / ys.length;
  let num = 0;
  let den = 0;
  for (let i = 0; i < xs.length; i++) {
    const dx = (xs[i] as number) - meanX;
    num += dx * ((ys[i] as number) - meanY);
    den += dx * dx;
  }
  return den === 0 ? 0 : num / den;
}

/** Samples a gateway process every `intervalMs` until stopped. */
export interface ProcessSampler {
  readonly samples: ResourceSample[];
  stop(): Promise<void>;
}

/** Where a sample reads from: the process, its `/metrics`, or `readHeap` for the heap. */
export interface SampleSource {
  pid: number;
  baseUrl: string;
  /** Reads the heap instead of `/metrics` (e.g. the live heap after a forced collection). */
  readHeap?: () => Promise<number>;
}

/** One reading of `pid`'s resources now (`atMs` 0). */
export async function readResources(options: SampleSource): Promise<ResourceSample> {
  const heapBytes = await (options.readHeap?.() ?? readHeapBytes(options.baseUrl)).catch(() => null);
  return { atMs: 0, rssBytes: readRssBytes(options.pid), heapBytes, openFds: countOpenFds(options.pid) };
}

export function sampleProcess(options: SampleSource & { intervalMs: number }): ProcessSampler {
  const samples: ResourceSample[] = [];
  const startedAt = Date.now();
  let stopped = false;
  let pending: Promise<void> = Promise.resolve();
  const take = async (): Promise<void> => {
    const sample = await readResources(options);
    samples.push({ ...sample, atMs: Date.now() - startedAt });
  };
  const timer = setInterval(() => {
    if (stopped) return;
    pending = pending.then(take).catch(() => undefined);
  }, options.intervalMs);
  pending = take().catch(() => undefined);
  return {
    samples,
    async stop() {
      stopped = true;
      clearInterval(timer);
      await pending;
    },
  };
}
