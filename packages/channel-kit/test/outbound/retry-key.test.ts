import { describe, expect, it } from 'vitest';
import { retryKeyOf } from '../../src/outbound/retry-key.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('retryKeyOf', () => {
  describe('when the same call is tried again', () => {
    it('gives the same UUID (version 8), which the platforms take as an idempotency key', () => {
      const key = retryKeyOf('turn-1', 0, ['hello']);
      expect(key).toMatch(UUID);
      expect(retryKeyOf('turn-1', 0, ['hello'])).toBe(key);
    });
  });

  describe('when anything of the call differs', () => {
    it('gives another key: the turn, the place in the send, or the texts', () => {
      const keys = new Set([
        retryKeyOf('turn-1', 0, ['hello']),
        retryKeyOf('turn-2', 0, ['hello']),
        retryKeyOf('turn-1', 1, ['hello']),
        retryKeyOf('turn-1', 0, ['hello', 'again']),
        retryKeyOf('turn-1', 0, ['hell', 'o']),
      ]);
      expect(keys.size).toBe(5);
    });
  });
});
