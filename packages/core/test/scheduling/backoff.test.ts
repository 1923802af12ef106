import { describe, expect, it } from 'vitest';
import { backoffDelayMs, retryDelayMs } from '../../src/index.js';

const policy = { baseDelayMs: 5000, maxDelayMs: 300_000 };

describe('retryDelayMs', () => {
  describe('when jitter is neutral', () => {
    it('doubles from 5 s and caps at 300 s', () => {
      const waits = Array.from({ length: 10 }, (_, i) => retryDelayMs(i + 1, policy, () => 0.5));
      expect(waits).toEqual([5, 10, 20, 40, 80, 160, 300, 300, 300, 300].map((s) => s * 1000));
    });

    it('does not overflow for a huge attempt number', () => {
      expect(retryDelayMs(Number.MAX_SAFE_INTEGER, policy, () => 0.5)).toBe(300_000);
    });
  });

  describe('when jitter is at its bounds', () => {
    it('stays within ±20% of the capped delay and never exceeds the maximum', () => {
      expect(retryDelayMs(1, policy, () => 0)).toBe(4000);
      expect(retryDelayMs(1, policy, () => 0.999_999)).toBeLessThanOrEqual(6000);
      expect(retryDelayMs(9, policy, () => 0)).toBe(240_000);
      expect(retryDelayMs(9, policy, () => 0.999_999)).toBe(300_000);
      for (let i = 0; i < 1000; i++) {
        const wait = retryDelayMs(3, policy);
        expect(wait).toBeGreaterThanOrEqual(16_000);
        expect(wait).toBeLessThanOrEqual(24_000);
      }
    });
  });

  describe('when the backend asks for a Retry-After', () => {
    it('waits that long when it is longer than the backoff', () => {
      expect(retryDelayMs(1, policy, () => 0.5, 42_000)).toBe(42_000);
      expect(retryDelayMs(1, policy, () => 0.5, 1_000)).toBe(5_000);
    });

    it('never waits longer than the maximum, whatever it asks for', () => {
      expect(retryDelayMs(1, policy, () => 0.5, 365 * 86_400_000)).toBe(300_000);
      expect(retryDelayMs(1, policy, () => 0.5, Number.POSITIVE_INFINITY)).toBe(300_000);
    });

    it('ignores a Retry-After that is not a number', () => {
      expect(retryDelayMs(1, policy, () => 0.5, Number.NaN)).toBe(5_000);
    });
  });
});

describe('backoffDelayMs', () => {
  describe('when counting restarts of a worker', () => {
    it('waits 5 s × 2^(n−1), capped at 300 s, without jitter', () => {
      const waits = Array.from({ length: 9 }, (_, i) => backoffDelayMs(i + 1, policy));
      expect(waits).toEqual([5, 10, 20, 40, 80, 160, 300, 300, 300].map((s) => s * 1000));
      expect(backoffDelayMs(Number.MAX_SAFE_INTEGER, policy)).toBe(300_000);
    });
  });
});
