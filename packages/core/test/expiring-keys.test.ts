import { describe, expect, it } from 'vitest';
import { ExpiringKeys } from '../src/structures/expiring-keys.js';

describe('ExpiringKeys', () => {
  describe('when a key is added twice within its TTL', () => {
    it('adds it only the first time', () => {
      const keys = new ExpiringKeys();
      expect(keys.add('k', 1000, 0)).toBe(true);
      expect(keys.add('k', 1000, 999)).toBe(false);
      expect(keys.add('k', 1000, 1000)).toBe(true);
    });
  });

  describe('when many keys have expired', () => {
    it('sweeps them while new keys are added, so memory follows the live keys', () => {
      const keys = new ExpiringKeys();
      for (let index = 0; index < 5000; index += 1) keys.add(`old-${index}`, 1000, 0);
      for (let index = 0; index < 20_000; index += 1) keys.add(`new-${index}`, 60_000, 1000);
      // Only the live keys remain: every expired one was swept.
      expect(keys.size).toBe(20_000);
      expect(keys.add('new-1', 60_000, 1000)).toBe(false);
    });
  });
});
