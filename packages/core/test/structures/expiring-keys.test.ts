import { describe, expect, it } from 'vitest';
import { ExpiringKeys } from '../../src/structures/expiring-keys.js';

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

  describe('when more keys are added within their TTL than maxKeys', () => {
    it('holds maxKeys, evicting the oldest added first', () => {
      const keys = new ExpiringKeys({ maxKeys: 3 });
      for (const key of ['a', 'b', 'c', 'd']) expect(keys.add(key, 60_000, 0)).toBe(true);
      expect(keys.size).toBe(3);
      // 'a' was evicted: it counts as new again; 'b' became the oldest and goes next.
      expect(keys.add('a', 60_000, 1)).toBe(true);
      expect(keys.add('c', 60_000, 1)).toBe(false);
      expect(keys.add('d', 60_000, 1)).toBe(false);
      expect(keys.add('b', 60_000, 1)).toBe(true);
    });

    it('evicts by the order keys were last added, not first', () => {
      const keys = new ExpiringKeys({ maxKeys: 2 });
      keys.add('a', 10, 0);
      keys.add('b', 60_000, 0);
      // 'a' expired and is added again: now newer than 'b'.
      keys.add('a', 60_000, 20);
      keys.add('c', 60_000, 20);
      expect(keys.add('a', 60_000, 21)).toBe(false);
      expect(keys.add('b', 60_000, 21)).toBe(true);
    });
  });

  describe('when no maxKeys is given', () => {
    it('holds at most 200,000 keys (the default)', () => {
      const keys = new ExpiringKeys();
      for (let index = 0; index < 250_000; index += 1) keys.add(`k-${index}`, 24 * 3_600_000, index);
      expect(keys.size).toBe(200_000);
    });
  });
});
