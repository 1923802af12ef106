import { setImmediate as nextTurn } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
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

describe('review: the memory status store given a status it cannot serialize', () => {
  it('refuses the put and keeps the status it had (as before the change)', async () => {
    const store = createMemoryMessageStatusStore();
    await store.put(status());
    await nextTurn();
    const circular: Record<string, unknown> = { text: 'x' };
    circular.self = circular;
    const put = store.put(status({ delivery: 'delivered', updated_at: 2, replies: [circular as never] }));
    await expect(put).rejects.toThrow();
    await nextTurn();
    expect(await store.get('m1')).toMatchObject({ delivery: 'pending', updated_at: 1 });
  });

  it('still reads the status it had once that put is done with', async () => {
    const store = createMemoryMessageStatusStore();
    await store.put(status());
    await nextTurn();
    const circular: Record<string, unknown> = { text: 'x' };
    circular.self = circular;
    await store.put(status({ delivery: 'delivered', updated_at: 2, replies: [circular as never] })).catch(() => {});
    await nextTurn();
    expect(await store.get('m1')).toMatchObject({ delivery: 'pending', updated_at: 1 });
  });
});
