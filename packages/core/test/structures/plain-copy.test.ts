import { describe, expect, it } from 'vitest';
import { plainCopy } from '../../src/structures/plain-copy.js';

describe('plainCopy', () => {
  it('copies nested objects and arrays deeply: changing the copy leaves the original as it was', () => {
    const original = {
      id: 'd1',
      origin: { chat: { id: 'c1' }, elements: [{ type: 'text', text: 'hi' }] },
      replies: [{ text: 'a' }],
      n: 1,
      gone: undefined,
      none: null,
    };
    const copy = plainCopy(original);
    expect(copy).toStrictEqual(original);
    copy.origin.chat.id = 'changed';
    (copy.origin.elements[0] as { text: string }).text = 'changed';
    copy.replies.push({ text: 'b' });
    expect(original.origin.chat.id).toBe('c1');
    expect(original.origin.elements[0]).toEqual({ type: 'text', text: 'hi' });
    expect(original.replies).toEqual([{ text: 'a' }]);
    expect(Object.keys(copy)).toContain('gone');
  });

  it('copies what is not plain data whole, as structuredClone does', () => {
    const at = new Date(5);
    const original = { at, tags: new Map([['k', { v: 1 }]]), bytes: new Uint8Array([1, 2]) };
    const copy = plainCopy(original);
    expect(copy.at).toEqual(at);
    expect(copy.at).not.toBe(at);
    expect(copy.tags.get('k')).toEqual({ v: 1 });
    expect(copy.tags).not.toBe(original.tags);
    expect([...copy.bytes]).toEqual([1, 2]);
    expect(copy.bytes).not.toBe(original.bytes);
  });

  it('keeps an own __proto__ key a key, as structuredClone does, and refuses a function or a symbol as it does', () => {
    const original = JSON.parse('{"text":"hi","__proto__":{"response_url":"https://example.invalid"}}');
    const copy = plainCopy(original);
    expect(Object.getPrototypeOf(copy)).toBe(Object.prototype);
    expect(copy.response_url).toBeUndefined();
    expect(Object.keys(copy)).toEqual(['text', '__proto__']);
    expect(Object.getOwnPropertyDescriptor(copy, '__proto__')?.value).toEqual({
      response_url: 'https://example.invalid',
    });
    expect(copy).toEqual(structuredClone(original));
    expect(() => plainCopy({ send: () => {} })).toThrow();
    expect(() => plainCopy({ tag: Symbol('s') })).toThrow();
  });

  it('copies an object without a prototype deeply, and returns primitives as they are', () => {
    const bare = Object.assign(Object.create(null), { a: { b: 1 } });
    const copy = plainCopy(bare);
    expect(copy.a).toEqual({ b: 1 });
    expect(copy.a).not.toBe(bare.a);
    expect(plainCopy('s')).toBe('s');
    expect(plainCopy(null)).toBeNull();
  });
});
