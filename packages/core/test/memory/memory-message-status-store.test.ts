import { setImmediate as nextTurn } from 'node:timers/promises';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { type MessageStatus, createMemoryMessageStatusStore } from '../../src/index.js';

function status(fields: Partial<MessageStatus> = {}): MessageStatus {
  return {
    id: 'm1',
    channel: 'api',
    tenant: 'default',
    generation: 0,
    status: 'completed',
    pipeline: 'echo',
    rule: null,
    turn: 't1',
    replies: [{ text: 'hi' }],
    delivery: 'pending',
    error: null,
    trace_id: null,
    updated_at: 1,
    ...fields,
  };
}

describe('createMemoryMessageStatusStore', () => {
  afterEach(() => vi.restoreAllMocks());

  describe("when a message's statuses follow each other within one event-loop turn", () => {
    it('still refuses a status that ranks below the one put before it', async () => {
      const store = createMemoryMessageStatusStore();
      await store.put(status({ delivery: 'delivered', updated_at: 2 }));
      await store.put(status({ updated_at: 3 }));
      expect(await store.get('m1')).toMatchObject({ delivery: 'delivered', updated_at: 2 });
    });
  });

  describe('when a status is read before its turn ends', () => {
    it('returns a copy of what was put', async () => {
      const store = createMemoryMessageStatusStore();
      const put = status();
      await store.put(put);
      const read = await store.get('m1');
      expect(read).toEqual(put);
      expect(read).not.toBe(put);
    });
  });

  describe('when the turn a status was put in has ended', () => {
    it('keeps the status as it was then', async () => {
      const store = createMemoryMessageStatusStore();
      const put = status();
      await store.put(put);
      await nextTurn();
      put.replies.push({ text: 'changed later' });
      expect((await store.get('m1'))?.replies).toEqual([{ text: 'hi' }]);
    });
  });

  describe('when a status cannot be serialized (a cycle, a BigInt)', () => {
    it('refuses the put and keeps the status it had', async () => {
      const store = createMemoryMessageStatusStore();
      await store.put(status());
      await nextTurn();
      const circular: Record<string, unknown> = { text: 'x' };
      circular.self = circular;
      const put = store.put(status({ delivery: 'delivered', updated_at: 2, replies: [circular as never] }));
      await expect(put).rejects.toThrow(/circular/);
      await nextTurn();
      expect(await store.get('m1')).toMatchObject({ delivery: 'pending', updated_at: 1 });
    });

    it('refuses it when put in the same turn as the status it would replace, which stays', async () => {
      const store = createMemoryMessageStatusStore();
      await store.put(status());
      const put = store.put(
        status({ delivery: 'delivered', updated_at: 2, error: { code: 'X', details: 1n } as never }),
      );
      await expect(put).rejects.toThrow(/BigInt/);
      expect(await store.get('m1')).toMatchObject({ delivery: 'pending', updated_at: 1 });
      await nextTurn();
      expect(await store.get('m1')).toMatchObject({ delivery: 'pending', updated_at: 1 });
    });

    it('accepts what JSON.stringify accepts: a shared object that is no cycle, a toJSON', async () => {
      const store = createMemoryMessageStatusStore();
      const shared = { text: 'same' };
      await store.put(status({ replies: [shared, shared, { text: 'at', at: new Date(0) } as never] }));
      await nextTurn();
      expect((await store.get('m1'))?.replies).toEqual([
        shared,
        shared,
        { text: 'at', at: '1970-01-01T00:00:00.000Z' },
      ]);
    });
  });
});
