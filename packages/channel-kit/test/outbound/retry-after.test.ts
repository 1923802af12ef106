import { describe, expect, it } from 'vitest';
import { MAX_RETRY_AFTER_MS, retryAfterMs } from '../../src/outbound/retry-after.js';

const NOW = Date.parse('2026-03-01T12:00:00Z');

describe('retryAfterMs', () => {
  describe('when the header gives seconds', () => {
    it('is the wait in ms', () => {
      expect(retryAfterMs('120', NOW)).toBe(120_000);
      expect(retryAfterMs(' 0 ', NOW)).toBe(0);
    });
  });

  describe('when the header gives an HTTP date', () => {
    it('is the time until then, and no wait for a date past', () => {
      expect(retryAfterMs('Sun, 01 Mar 2026 12:00:30 GMT', NOW)).toBe(30_000);
      expect(retryAfterMs('Sun, 01 Mar 2026 11:00:00 GMT', NOW)).toBe(0);
    });
  });

  describe('when the wait is beyond reason', () => {
    it('is cut to MAX_RETRY_AFTER_MS', () => {
      expect(retryAfterMs('31536000', NOW)).toBe(MAX_RETRY_AFTER_MS);
    });
  });

  describe('when the header is absent or unreadable', () => {
    it('is undefined', () => {
      for (const header of [undefined, null, '', 'soon', '-5', '1e3', '12abc']) {
        expect(retryAfterMs(header, NOW)).toBeUndefined();
      }
    });
  });
});
