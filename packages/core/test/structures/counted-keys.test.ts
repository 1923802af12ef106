import { describe, expect, it } from 'vitest';
import { CountedKeys } from '../../src/structures/counted-keys.js';

describe('CountedKeys', () => {
  it('holds a key until it was deleted as often as it was added, then forgets it', () => {
    const keys = new CountedKeys();
    keys.add('a');
    keys.add('a');
    keys.add('b');
    keys.delete('a');
    expect(keys.has('a')).toBe(true);
    expect(keys.size).toBe(2);
    keys.delete('a');
    keys.delete('b');
    expect(keys.has('a')).toBe(false);
    expect(keys.has('b')).toBe(false);
    expect(keys.size).toBe(0);
  });

  it('ignores a delete of a key it does not hold', () => {
    const keys = new CountedKeys();
    keys.delete('a');
    expect(keys.has('a')).toBe(false);
    expect(keys.size).toBe(0);
  });
});
