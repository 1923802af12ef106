import { describe, expect, it } from 'vitest';
import { createMemoryHistoryStore } from '../../src/index.js';

describe('createMemoryHistoryStore', () => {
  describe('when a conversation grows past maxEntries', () => {
    it('keeps only the newest entries', async () => {
      const history = createMemoryHistoryStore({ maxEntries: 3 });
      for (const content of ['a', 'b', 'c', 'd', 'e']) {
        await history.append('s', 'p', [{ role: 'user', content }]);
      }
      expect((await history.recent('s', 'p', 10)).map((entry) => entry.content)).toEqual(['c', 'd', 'e']);
    });
  });
});
