import { Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { CountingHistogram } from '../src/counting-histogram.js';

const BUCKETS = [0.01, 0.1, 1, 10];
const OBSERVED = [0.005, 0.01, 0.05, 0.5, 0.7, 5, 50];

/** The text exposition of one registry. */
function scrape(fill: (registry: Registry) => void): Promise<string> {
  const registry = new Registry();
  fill(registry);
  return registry.metrics();
}

describe('counting histogram', () => {
  it('exposes the same text as a prom-client Histogram fed the same observations', async () => {
    const expected = await scrape((registry) => {
      const plain = new Histogram({
        name: 'wait_seconds',
        help: 'Wait.',
        buckets: BUCKETS,
        registers: [registry],
      });
      for (const value of OBSERVED) plain.observe(value);
    });
    const actual = await scrape((registry) => {
      const counting = new CountingHistogram({
        name: 'wait_seconds',
        help: 'Wait.',
        buckets: BUCKETS,
        registers: [registry],
      });
      const series = counting.series({});
      for (const value of OBSERVED) series.observe(value);
    });
    expect(actual).toBe(expected);
    expect(actual).toContain('wait_seconds_bucket{le="0.1"} 3');
  });

  it('keeps one series per label set, in the same text as prom-client', async () => {
    const labelled = [
      { pipeline: 'echo', result: 'completed' },
      { pipeline: 'llm', result: 'retried' },
    ] as const;
    const expected = await scrape((registry) => {
      const plain = new Histogram({
        name: 'turn_seconds',
        help: 'Turns.',
        labelNames: ['pipeline', 'result'] as const,
        buckets: BUCKETS,
        registers: [registry],
      });
      for (const labels of labelled) for (const value of OBSERVED) plain.observe(labels, value);
    });
    const actual = await scrape((registry) => {
      const counting = new CountingHistogram({
        name: 'turn_seconds',
        help: 'Turns.',
        labelNames: ['pipeline', 'result'] as const,
        buckets: BUCKETS,
        registers: [registry],
      });
      for (const labels of labelled) for (const value of OBSERVED) counting.series(labels).observe(value);
    });
    expect(actual).toBe(expected);
  });

  it('starts again from zero when the registry resets its metrics', async () => {
    const registry = new Registry();
    const counting = new CountingHistogram({
      name: 'wait_seconds',
      help: 'Wait.',
      buckets: BUCKETS,
      registers: [registry],
    });
    counting.series({}).observe(0.5);
    registry.resetMetrics();
    expect(await registry.metrics()).toContain('wait_seconds_count 0');
  });
});
