import { Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { CountingHistogram } from '../src/counting-histogram.js';

const BUCKETS = [0.01, 0.1, 1, 10];
const OBSERVED = [0.005, 0.01, 0.05, 0.5, 0.7, 5, 50];

type Labels = Record<string, string>;

/**
 * The text exposition of a prom-client Histogram and of a CountingHistogram, each alone in a
 * registry, after both observed `OBSERVED` for every label set of `labelled`.
 */
async function exposeBoth(labelNames: readonly string[], labelled: readonly Labels[]) {
  const options = { name: 'wait_seconds', help: 'Wait.', labelNames, buckets: BUCKETS };
  const plainRegistry = new Registry();
  const plain = new Histogram({ ...options, registers: [plainRegistry] });
  const countingRegistry = new Registry();
  const counting = new CountingHistogram({ ...options, registers: [countingRegistry] });
  for (const labels of labelled) {
    for (const value of OBSERVED) {
      plain.observe(labels, value);
      counting.series(labels).observe(value);
    }
  }
  return { expected: await plainRegistry.metrics(), actual: await countingRegistry.metrics() };
}

describe('counting histogram', () => {
  it('exposes the same text as a prom-client Histogram fed the same observations', async () => {
    const { expected, actual } = await exposeBoth([], [{}]);
    expect(actual).toBe(expected);
    expect(actual).toContain('wait_seconds_bucket{le="0.1"} 3');
  });

  it('keeps one series per label set, in the same text as prom-client', async () => {
    const { expected, actual } = await exposeBoth(
      ['pipeline', 'result'],
      [
        { pipeline: 'echo', result: 'completed' },
        { pipeline: 'llm', result: 'retried' },
      ],
    );
    expect(actual).toBe(expected);
    expect(actual).toContain('wait_seconds_count{pipeline="llm",result="retried"} 7');
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
