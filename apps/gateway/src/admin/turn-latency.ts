import type { TurnResult } from '@switchboard/core';

/** Durations kept per pipeline: enough for a stable p95, small enough to sort on each read. */
const SAMPLES = 512;

/** Latency of recent completed turns per pipeline. */
export interface TurnLatency {
  /** Feeds it from the controller observer: O(1), completed turns only. */
  turnEnded(turn: { pipeline: string }, result: TurnResult, durationMs: number): void;
  /** p50 and p95 in ms over the last turns of each pipeline that ran one since the start. */
  percentiles(): Record<string, { p50_ms: number; p95_ms: number; samples: number }>;
}

/**
 * A ring of the last 512 completed turn durations per pipeline (pipeline call and delivery), on
 * this replica; the metrics histograms' buckets are too coarse for a p50 an operator reads.
 */
export function createTurnLatency(): TurnLatency {
  const rings = new Map<string, { values: Float64Array; next: number; size: number }>();

  function percentile(sorted: Float64Array, fraction: number): number {
    return sorted[Math.min(sorted.length - 1, Math.floor(fraction * sorted.length))] ?? 0;
  }

  return {
    turnEnded(turn, result, durationMs) {
      if (result !== 'completed') return;
      let ring = rings.get(turn.pipeline);
      if (ring === undefined) {
        ring = { values: new Float64Array(SAMPLES), next: 0, size: 0 };
        rings.set(turn.pipeline, ring);
      }
      ring.values[ring.next] = durationMs;
      ring.next = (ring.next + 1) % SAMPLES;
      ring.size = Math.min(SAMPLES, ring.size + 1);
    },
    percentiles() {
      const result: Record<string, { p50_ms: number; p95_ms: number; samples: number }> = {};
      for (const [pipeline, ring] of rings) {
        const sorted = ring.values.slice(0, ring.size).sort();
        result[pipeline] = {
          p50_ms: percentile(sorted, 0.5),
          p95_ms: percentile(sorted, 0.95),
          samples: ring.size,
        };
      }
      return result;
    },
  };
}
