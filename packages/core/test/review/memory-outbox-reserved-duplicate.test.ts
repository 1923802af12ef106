import { describe, expect, it } from 'vitest';
import {
  type Delivery,
  type InboundMessage,
  createMemoryReplyOutbox,
  createReplySender,
} from '../../src/index.js';
import { message } from '../harness.js';

function deliveryOf(index: number, chat = 'a', extra: Partial<Delivery> = {}): Delivery {
  const origin = message(chat, `m${index}`);
  return {
    id: `d${index}`,
    channel: 'api',
    chat,
    origin,
    messages: [{ message: origin, session: chat, pipeline: 'p', attempt: 1 }],
    turnId: `turn-${index}`,
    replies: [{ text: `r${index}` }],
    ownsOutcome: true,
    createdAt: Date.now(),
    attempts: 0,
    notBefore: 0,
    ...extra,
  };
}

describe('review: memory outbox, the same delivery id added while it is reserved', () => {
  it('outbox level: is a duplicate, as it is while stored', async () => {
    const outbox = createMemoryReplyOutbox();
    const delivery = deliveryOf(1, 'a', { rememberForMs: 60_000 });
    const reserved = outbox.reserve?.(delivery, Date.now());
    if (reserved === undefined || reserved === null || reserved === 'duplicate') throw new Error('not reserved');
    expect(await outbox.add(delivery)).toBe('duplicate');
  });

  it('through the sender: a second replay of one dead letter during the first send is not sent twice', async () => {
    const outbox = createMemoryReplyOutbox();
    const seen: string[] = [];
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const channel = {
      id: 'api',
      localSend: true,
      send: async (origin: InboundMessage) => {
        await gate;
        seen.push(origin.id);
      },
    };
    const sender = createReplySender({
      outbox,
      channel: () => channel,
      policy: () => ({
        sendTimeoutMs: 5_000,
        concurrency: 4,
        maxAgeMs: 60_000,
        retry: { baseDelayMs: 1, maxDelayMs: 1 },
      }),
      outcomes: { record: () => {} },
      pollMs: 10,
    });
    sender.start();
    try {
      const delivery = deliveryOf(1, 'a', { rememberForMs: 60_000 });
      const first = sender.add(delivery);
      const second = await sender.add({ ...delivery });
      release();
      expect(await first).toBe('ended');
      await expect.poll(() => outbox.pending()).toEqual({});
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect({ second, seen }).toEqual({ second: 'duplicate', seen: [delivery.origin.id] });
    } finally {
      await sender.stop({ drainTimeoutMs: 0 });
    }
  });
});
