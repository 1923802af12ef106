import { describe, expect, it } from 'vitest';
import { IndexedSet, type SetNode } from '../../src/structures/indexed-set.js';

type Named = SetNode & { name: string };
const node = (name: string): Named => ({ name, setIndex: -1 });
const names = (set: IndexedSet<Named>) =>
  set
    .values()
    .map((n) => n.name)
    .sort();

describe('indexed set', () => {
  it('deletes from the middle and from the end, keeping every other node reachable', () => {
    const set = new IndexedSet<Named>();
    const a = node('a');
    const b = node('b');
    const c = node('c');
    const d = node('d');
    for (const n of [a, b, c, d]) set.add(n);
    set.delete(b);
    expect(names(set)).toEqual(['a', 'c', 'd']);
    set.delete(d);
    expect(names(set)).toEqual(['a', 'c']);
    // d had taken b's place before it went; c is found by its own index all the same.
    set.delete(c);
    expect(names(set)).toEqual(['a']);
    expect(set.size).toBe(1);
  });

  it('ignores a node deleted twice or held by another set', () => {
    const set = new IndexedSet<Named>();
    const other = new IndexedSet<Named>();
    const a = node('a');
    const b = node('b');
    const stranger = node('stranger');
    set.add(a);
    set.add(b);
    other.add(stranger);
    set.delete(a);
    set.delete(a);
    set.delete(stranger);
    expect(names(set)).toEqual(['b']);
    expect(b.setIndex).toBe(0);
    expect(a.setIndex).toBe(-1);
    expect(names(other)).toEqual(['stranger']);
  });

  it('hands out a snapshot that deleting while iterating does not disturb', () => {
    const set = new IndexedSet<Named>();
    const nodes = ['a', 'b', 'c'].map(node);
    for (const n of nodes) set.add(n);
    const seen: string[] = [];
    for (const n of set.values()) {
      seen.push(n.name);
      set.delete(n);
    }
    expect(seen.sort()).toEqual(['a', 'b', 'c']);
    expect(set.size).toBe(0);
  });
});
