import { Counter, Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { countingCounter, countingHistogram } from '../src/counting-metrics.js';

const BUCKETS = [0.01, 0.1, 1, 10];
const OBSERVED = [0.005, 0.01, 0.05, 0.5, 0.7, 5, 50];

type Labels = Record<string, string>;

/** The text exposition of a registry holding only what `fill` registers in it. */
async function expose(fill: (registers: Registry[]) => void): Promise<string> {
  const registry = new Registry();
  fill([registry]);
  return registry.metrics();
}

/**
 * The exposition of a prom-client Histogram and of a counting histogram after both observed
 * `OBSERVED` for every label set of `labelled`.
 */
async function histogramsBoth(labelNames: readonly string[], labelled: readonly Labels[]) {
  const options = { name: 'wait_seconds', help: 'Wait.', labelNames, buckets: BUCKETS };
  const expected = await expose((registers) => {
    const plain = new Histogram({ ...options, registers });
    for (const labels of labelled) for (const value of OBSERVED) plain.observe(labels, value);
  });
  const actual = await expose((registers) => {
    const counting = countingHistogram({ ...options, registers });
    for (const labels of labelled) for (const value of OBSERVED) counting.series(labels).observe(value);
  });
  return { expected, actual };
}

describe('counting metrics', () => {
  it('expose a histogram in the same text as a prom-client Histogram fed the same observations', async () => {
    const { expected, actual } = await histogramsBoth([], [{}]);
    expect(actual).toBe(expected);
    expect(actual).toContain('wait_seconds_bucket{le="0.1"} 3');
  });

  it('keep one histogram series per label set, in the same text as prom-client', async () => {
    const { expected, actual } = await histogramsBoth(
      ['pipeline', 'result'],
      [
        { pipeline: 'echo', result: 'completed' },
        { pipeline: 'llm', result: 'retried' },
      ],
    );
    expect(actual).toBe(expected);
    expect(actual).toContain('wait_seconds_count{pipeline="llm",result="retried"} 7');
  });

  it('expose a counter in the same text as a prom-client Counter', async () => {
    const options = { name: 'messages_total', help: 'Messages.', labelNames: ['outcome', 'reason'] as const };
    const counted = [
      { outcome: 'completed', reason: '' },
      { outcome: 'dropped', reason: 'shutdown' },
      { outcome: 'completed', reason: '' },
    ];
    const expected = await expose((registers) => {
      const plain = new Counter({ ...options, registers });
      for (const labels of counted) plain.inc(labels);
    });
    const actual = await expose((registers) => {
      const counting = countingCounter({ ...options, registers });
      for (const labels of counted) counting.series(labels).inc();
    });
    expect(actual).toBe(expected);
    expect(actual).toContain('messages_total{outcome="completed",reason=""} 2');
  });

  it('start again from zero when the registry resets its metrics', async () => {
    const registry = new Registry();
    const waits = countingHistogram({
      name: 'wait_seconds',
      help: 'Wait.',
      buckets: BUCKETS,
      registers: [registry],
    });
    const messages = countingCounter({ name: 'messages_total', help: 'Messages.', registers: [registry] });
    waits.series({}).observe(0.5);
    messages.series({}).inc();
    registry.resetMetrics();
    const text = await registry.metrics();
    expect(text).toContain('wait_seconds_count 0');
    expect(text).toContain('messages_total 0');
  });
});
