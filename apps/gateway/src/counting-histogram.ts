import type { Metric, Registry } from 'prom-client';

/** One line of the exposition, in the shape prom-client's registry formats. */
interface SeriesValue {
  metricName: string;
  labels: Readonly<Record<string, string | number>>;
  value: number;
}

/** The counts of one label set; keep it to observe without looking it up. */
export class HistogramSeries {
  /** Observations per bucket, not cumulative; values above the last bound are only in `count`. */
  readonly #inBucket: Float64Array;
  readonly #bounds: readonly number[];
  #sum = 0;
  #count = 0;

  constructor(
    readonly labels: Readonly<Record<string, string>>,
    bounds: readonly number[],
  ) {
    this.#bounds = bounds;
    this.#inBucket = new Float64Array(bounds.length);
  }

  observe(value: number): void {
    let bucket = 0;
    for (const bound of this.#bounds) {
      if (value <= bound) break;
      bucket += 1;
    }
    const inBucket = this.#inBucket;
    if (bucket < inBucket.length) inBucket[bucket] = (inBucket[bucket] ?? 0) + 1;
    this.#sum += value;
    this.#count += 1;
  }

  /** prom-client's values for this series: cumulative buckets, +Inf, sum and count. */
  values(name: string): SeriesValue[] {
    let cumulative = 0;
    const values = this.#bounds.map((le, bucket): SeriesValue => {
      cumulative += this.#inBucket[bucket] ?? 0;
      return { metricName: `${name}_bucket`, labels: { le, ...this.labels }, value: cumulative };
    });
    values.push(
      { metricName: `${name}_bucket`, labels: { le: '+Inf', ...this.labels }, value: this.#count },
      { metricName: `${name}_sum`, labels: this.labels, value: this.#sum },
      { metricName: `${name}_count`, labels: this.labels, value: this.#count },
    );
    return values;
  }
}

export interface CountingHistogramOptions<L extends string> {
  name: string;
  help: string;
  buckets: readonly number[];
  labelNames?: readonly L[];
  registers: Registry[];
}

/**
 * A Prometheus histogram that counts into plain arrays and leaves the text format to prom-client's
 * registry at scrape time. prom-client's own `observe` hashes the labels into a string and finds
 * the bucket by name on every call; with two observations per message that took a fifth of the
 * gateway's HTTP throughput (docs/BENCHMARKS.md). The exposition is the same as a prom-client
 * Histogram's (its test compares them).
 */
export class CountingHistogram<L extends string = never> {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  readonly name: string;
  readonly help: string;
  readonly #bounds: readonly number[];
  readonly #labelNames: readonly L[];
  readonly #series = new Map<string, HistogramSeries>();

  constructor(options: CountingHistogramOptions<L>) {
    this.name = options.name;
    this.help = options.help;
    this.#bounds = [...options.buckets].sort((a, b) => a - b);
    this.#labelNames = options.labelNames ?? [];
    this.reset();
    // The registry reads only name, help, type, aggregator, get() and reset(); its parameter type
    // names prom-client's own metric classes, hence the cast.
    for (const registry of options.registers) registry.registerMetric(this as unknown as Metric);
  }

  /** The series of these label values, created on first use. */
  series(labels: Record<L, string>): HistogramSeries {
    // Built without arrays: it runs once per turn.
    let key = '';
    for (const name of this.#labelNames) key += `${labels[name]}\u0000`;
    let series = this.#series.get(key);
    if (series === undefined) {
      const own = Object.fromEntries(this.#labelNames.map((name) => [name, labels[name]]));
      series = new HistogramSeries(own, this.#bounds);
      this.#series.set(key, series);
    }
    return series;
  }

  /** What prom-client's registry formats. */
  async get() {
    const values = [...this.#series.values()].flatMap((series) => series.values(this.name));
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  /** Forgets every observation; called by `registry.resetMetrics()` too. */
  reset(): void {
    this.#series.clear();
    // Like prom-client, a histogram without labels reports zeros before its first observation.
    if (this.#labelNames.length === 0) this.series({} as Record<L, string>);
  }
}
