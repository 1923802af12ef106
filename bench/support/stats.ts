/** The value below which `p` percent of `sorted` (ascending) fall: nearest rank. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1] as number;
}

export function median(values: readonly number[]): number {
  return percentile(
    [...values].sort((a, b) => a - b),
    50,
  );
}

/** Milliseconds `run` took, wall clock. */
export async function timeMs(run: () => Promise<void>): Promise<number> {
  const startedAt = performance.now();
  await run();
  return performance.now() - startedAt;
}

/** p50, p99 and max of `samples`, in their own unit. */
export function summarize(samples: readonly number[]): {
  p50: number;
  p99: number;
  max: number;
  count: number;
} {
  const sorted = [...samples].sort((a, b) => a - b);
  return {
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    max: sorted[sorted.length - 1] ?? Number.NaN,
    count: sorted.length,
  };
}

/** Timing samples grouped under string keys, e.g. `scheduler · workload`. */
export class SampleSet {
  readonly #samples = new Map<string, number[]>();

  add(key: string, value: number): void {
    const list = this.#samples.get(key);
    if (list === undefined) this.#samples.set(key, [value]);
    else list.push(value);
  }

  /** The smallest sample: the run least disturbed by other work on the machine. */
  fastest(key: string): number {
    const list = this.#samples.get(key);
    if (list === undefined) throw new Error(`no samples for ${key}`);
    return Math.min(...list);
  }

  toJSON(): Record<string, number[]> {
    return Object.fromEntries(this.#samples);
  }
}
