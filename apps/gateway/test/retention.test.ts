import { createMemoryMessageStatusStore, silentLogger } from '@switchboard/core';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { DAY_MS, createRetention } from '../src/retention.js';

const status = (id: string, updatedAt: number) => ({
  id,
  status: 'completed' as const,
  channel: 'api',
  tenant: 'default',
  generation: 0,
  pipeline: 'echo',
  rule: null,
  turn: 't',
  replies: [],
  delivery: null,
  error: null,
  trace_id: null,
  updated_at: updatedAt,
});

describe('retention', () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: Date.UTC(2026, 0, 10) });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  describe('when records age past their keep time', () => {
    it('prunes them at start and every hour after, keeping recent ones', async () => {
      const statuses = createMemoryMessageStatusStore();
      await statuses.put(status('old', Date.now() - 2 * DAY_MS));
      await statuses.put(status('recent', Date.now() - 1000));
      const retention = createRetention(
        [{ name: 'statuses', keepMs: DAY_MS, prune: (before) => statuses.prune(before) }],
        silentLogger,
      );
      retention.start();
      await vi.advanceTimersByTimeAsync(0);
      expect(await statuses.get('old')).toBeNull();
      expect(await statuses.get('recent')).not.toBeNull();

      await vi.advanceTimersByTimeAsync(DAY_MS + 3_600_000);
      expect(await statuses.get('recent')).toBeNull();
      retention.stop();
    });
  });
});
