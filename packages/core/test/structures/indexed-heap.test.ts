import { describe, expect, it } from 'vitest';
import { IndexedHeap } from '../../src/structures/indexed-heap.js';

describe('IndexedHeap', () => {
  describe('when the first nodes are asked for', () => {
    it('returns them in order, at most the count, leaving the heap unchanged', () => {
      const heap = new IndexedHeap<{ key: number; heapIndex: number }>((a, b) => a.key < b.key);
      const keys = [42, 7, 19, 3, 88, 3, 61, 25, 11, 54, 0, 73];
      for (const key of keys) heap.push({ key, heapIndex: -1 });
      const sorted = [...keys].sort((a, b) => a - b);
      expect(heap.first(5).map((node) => node.key)).toEqual(sorted.slice(0, 5));
      expect(heap.first(100).map((node) => node.key)).toEqual(sorted);
      expect(heap.first(0)).toEqual([]);
      expect(heap.size).toBe(keys.length);
      const popped: number[] = [];
      for (let node = heap.pop(); node !== undefined; node = heap.pop()) popped.push(node.key);
      expect(popped).toEqual(sorted);
    });
  });
});
