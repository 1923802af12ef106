import { describe, expect, it } from 'vitest';
import { byteSize, parseByteSize } from '../../src/index.js';

describe('parseByteSize', () => {
  it.each([
    ['25MB', 25_000_000],
    ['1.5 kb', 1500],
    ['2MiB', 2_097_152],
    ['512', 512],
    [512, 512],
    ['10 bytes', null],
  ])('reads %j as %j', (input, bytes) => {
    expect(parseByteSize(input)).toBe(bytes);
  });
});

describe('byteSize', () => {
  const schema = byteSize({ min: 1, max: 1_000_000_000 });

  it('outputs bytes', () => {
    expect(schema.parse('25MB')).toBe(25_000_000);
  });

  it('names the problem of a size out of bounds or unreadable', () => {
    expect(schema.safeParse('2GB').error?.issues[0]?.message).toMatch(
      /must be between 1 and 1000000000 bytes/,
    );
    expect(schema.safeParse('lots').error?.issues[0]?.message).toMatch(/invalid size "lots"/);
  });
});
