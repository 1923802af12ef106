import { describe, expect, it } from 'vitest';
import type { HistoryEntry, HistoryStore } from '@switchboard/core';
import { type StoreFactory, useStoreUnderTest } from './store-harness.js';

const SESSION = 'telegram:tg:person:42';

/** `count` alternating user/assistant entries, numbered from `from`. */
function exchange(from: number, count: number): HistoryEntry[] {
  return Array.from({ length: count }, (_, index) => ({
    role: (from + index) % 2 === 0 ? 'user' : 'assistant',
    content: `message ${from + index}`,
  }));
}

/** The behaviour every `HistoryStore` must show (ports/history-store.ts); run it once per implementation. */
export function historyStoreContract(name: string, factory: StoreFactory<HistoryStore>): void {
  describe(`HistoryStore contract: ${name}`, () => {
    const subject = useStoreUnderTest(factory);

    describe('when a conversation has no history', () => {
      it('returns an empty list', async () => {
        expect(await subject.store.recent(SESSION, 'assistant', 10)).toEqual([]);
      });
    });

    describe('when entries are appended', () => {
      it('returns them oldest first across several appends', async () => {
        await subject.store.append(SESSION, 'assistant', exchange(0, 2));
        await subject.store.append(SESSION, 'assistant', exchange(2, 3));
        expect(await subject.store.recent(SESSION, 'assistant', 10)).toEqual(exchange(0, 5));
      });

      it('returns only the last `limit` entries, still oldest first', async () => {
        await subject.store.append(SESSION, 'assistant', exchange(0, 8));
        expect(await subject.store.recent(SESSION, 'assistant', 3)).toEqual(exchange(5, 3));
      });

      it('ignores an empty append', async () => {
        await subject.store.append(SESSION, 'assistant', []);
        expect(await subject.store.recent(SESSION, 'assistant', 10)).toEqual([]);
      });
    });

    describe('when several conversations exist', () => {
      it('keeps each session and pipeline apart', async () => {
        await subject.store.append(SESSION, 'assistant', exchange(0, 2));
        await subject.store.append(SESSION, 'support', exchange(10, 2));
        await subject.store.append('telegram:tg:person:43', 'assistant', exchange(20, 2));
        expect(await subject.store.recent(SESSION, 'assistant', 10)).toEqual(exchange(0, 2));
        expect(await subject.store.recent(SESSION, 'support', 10)).toEqual(exchange(10, 2));
        expect(await subject.store.recent('telegram:tg:person:43', 'assistant', 10)).toEqual(exchange(20, 2));
      });

      it('does not confuse keys whose parts contain separators', async () => {
        await subject.store.append('a:b', 'c', exchange(0, 1));
        await subject.store.append('a', 'b:c', exchange(1, 1));
        expect(await subject.store.recent('a:b', 'c', 10)).toEqual(exchange(0, 1));
        expect(await subject.store.recent('a', 'b:c', 10)).toEqual(exchange(1, 1));
      });
    });

    describe('when the store is reopened', () => {
      it('still holds the history', async (context) => {
        await subject.store.append(SESSION, 'assistant', exchange(0, 4));
        const reopened = await subject.reopen();
        if (reopened === null) return context.skip('not durable');
        expect(await reopened.recent(SESSION, 'assistant', 10)).toEqual(exchange(0, 4));
      });
    });
  });
}
