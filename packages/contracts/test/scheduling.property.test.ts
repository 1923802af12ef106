import fc from 'fast-check';
import { afterEach, beforeEach, describe, it, vi } from 'vitest';
import { createMemoryQueryPool } from '@switchboard/core';
import {
  SCHEDULING_POLICIES,
  expectSchedulingInvariants,
  schedulingCommand,
  simulateScheduling,
} from '../src/index.js';

/** `controllers` controllers sharing one memory pool, on vitest's fake clock. */
function memoryWorld(globalLimit: number, controllers: number) {
  const pool = createMemoryQueryPool({
    concurrency: { global: globalLimit, perSession: 1 },
    limits: { maxPending: 10_000, maxPendingPerSession: 500 },
    pipelines: SCHEDULING_POLICIES,
  });
  return {
    pools: Array.from({ length: controllers }, () => pool),
    now: () => Date.now(),
    advance: (ms: number) => vi.advanceTimersByTimeAsync(ms).then(() => undefined),
  };
}

describe('scheduling (property)', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  for (const controllers of [1, 3]) {
    it(`keeps the limits, per-session order and exactly one outcome per message with ${controllers} controller(s) on one pool`, async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.integer({ min: 1, max: 3 }),
          fc.array(schedulingCommand, { maxLength: 60 }),
          async (limit, commands) => {
            expectSchedulingInvariants(
              await simulateScheduling(memoryWorld(limit, controllers), limit, commands),
            );
          },
        ),
        { numRuns: 100 },
      );
    });
  }
});
