import type { Metric, Registry } from 'prom-client';

/** One line of the exposition, in the shape prom-client's registry formats. */
interface SeriesValue {
  metricName?: string;
  labels: Readonly<Record<string, string | number>>;
  value: number;
}

type Labels = Readonly<Record<string, string>>;

/** What one set of label values has counted. */
interface Series {
  values(name: string): SeriesValue[];
}

/** A counter's count for one label set; keep it to count without looking it up. */
export class CounterSeries implements Series {
  #count = 0;

  constructor(readonly labels: Labels) {}

  inc(): void {
    this.#count += 1;
  }

  values(): SeriesValue[] {
    return [{ labels: this.labels, value: this.#count }];
  }
}

/** A histogram's counts for one label set; keep it to observe without looking it up. */
export class HistogramSeries implements Series {
  /** Observations per bucket, not cumulative; values above the last bound are only in `count`. */
  readonly #inBucket: Float64Array;
  readonly #bounds: readonly number[];
  #sum = 0;
  #count = 0;

  constructor(
    readonly labels: Labels,
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

  /** Cumulative buckets, +Inf, sum and count. */
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

export interface CountingMetricOptions<L extends string> {
  name: string;
  help: string;
  labelNames?: readonly L[];
  /** Registries to join now; default none (a registry built later registers the metric itself). */
  registers?: Registry[];
}

/**
 * A Prometheus counter or histogram that counts in plain memory and leaves the text format to
 * prom-client's registry at scrape time. prom-client's own `inc` and `observe` hash the label
 * values into a string and (histograms) find the bucket by name on every call; three such calls
 * per message took a fifth of the gateway's HTTP throughput
 * (bench/HISTORY.md#tuning-pass-3-answers-and-metrics). The exposition
 * is the same as prom-client's (its test compares them).
 */
export class CountingMetric<L extends string, S extends Series> {
  readonly aggregator = 'sum';
  readonly #labelNames: readonly L[];
  readonly #createSeries: (labels: Labels) => S;
  readonly #series = new Map<string, S>();
  readonly name: string;
  readonly help: string;

  constructor(
    readonly type: 'counter' | 'histogram',
    options: CountingMetricOptions<L>,
    createSeries: (labels: Labels) => S,
  ) {
    this.name = options.name;
    this.help = options.help;
    this.#labelNames = options.labelNames ?? [];
    this.#createSeries = createSeries;
    this.reset();
    // The registry reads only name, help, type, aggregator, get() and reset(); its parameter type
    // names prom-client's own metric classes, hence the cast.
    for (const registry of options.registers ?? []) registry.registerMetric(this as unknown as Metric);
  }

  /** The series of these label values, created on first use. */
  series(labels: Record<L, string>): S {
    // Built without arrays: it runs once per message or turn.
    let key = '';
    for (const name of this.#labelNames) key += `${labels[name]}\u0000`;
    let series = this.#series.get(key);
    if (series === undefined) {
      series = this.#createSeries(Object.fromEntries(this.#labelNames.map((name) => [name, labels[name]])));
      this.#series.set(key, series);
    }
    return series;
  }

  /** What prom-client's registry formats. */
  async get() {
    const values = [...this.#series.values()].flatMap((series) => series.values(this.name));
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  /** Forgets every count; called by `registry.resetMetrics()` too. */
  reset(): void {
    this.#series.clear();
    // Like prom-client, a metric without labels reports zero before its first count.
    if (this.#labelNames.length === 0) this.series({} as Record<L, string>);
  }
}

export function countingCounter<L extends string = never>(
  options: CountingMetricOptions<L>,
): CountingMetric<L, CounterSeries> {
  return new CountingMetric('counter', options, (labels) => new CounterSeries(labels));
}

export function countingHistogram<L extends string = never>(
  options: CountingMetricOptions<L> & { buckets: readonly number[] },
): CountingMetric<L, HistogramSeries> {
  const bounds = [...options.buckets].sort((a, b) => a - b);
  return new CountingMetric('histogram', options, (labels) => new HistogramSeries(labels, bounds));
}
