import { describe, expect, it } from 'vitest';
import { newUlid } from '../../src/model/ids.js';

const ULID = /^[0-9A-HJKMNP-TV-Z]{26}$/;
const ENCODING = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

/** The milliseconds encoded in a ULID's first 10 characters. */
const timeOf = (id: string) => [...id.slice(0, 10)].reduce((ms, char) => ms * 32 + ENCODING.indexOf(char), 0);

describe('newUlid', () => {
  it('makes 26-character Crockford base-32 ids carrying the time', () => {
    const id = newUlid(1_700_000_000_123);
    expect(id).toMatch(ULID);
    expect(timeOf(id)).toBe(1_700_000_000_123);
  });

  it('sorts in creation order, also within one millisecond', () => {
    const ids = Array.from({ length: 10_000 }, (_, i) => newUlid(1_800_000_000_000 + Math.floor(i / 1000)));
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('draws fresh randomness each millisecond', () => {
    const a = newUlid(1_900_000_000_000);
    const b = newUlid(1_900_000_000_001);
    expect(a.slice(10)).not.toBe(b.slice(10));
  });
});
