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

describe('review: memory outbox, a reserved send that fails with a delivery of its chat added behind it', () => {
  it('outbox level: unreserve then add keeps the reserved delivery ahead of the one added behind it', async () => {
    const outbox = createMemoryReplyOutbox();
    const reserved = outbox.reserve?.(deliveryOf(1), Date.now());
    if (reserved === undefined || reserved === null || reserved === 'duplicate') throw new Error('not reserved');
    expect(await outbox.add(deliveryOf(2))).toBe('added');
    // The reserved send failed: sendBeforeStoring gives it back and adds it.
    outbox.unreserve?.(reserved);
    expect(await outbox.add(deliveryOf(1))).toBe('added');
    expect((await outbox.claim('api', Date.now()))?.delivery.id).toBe('d1');
  });

  it('through the reply sender: the chat sees the first answer before the second', async () => {
    const outbox = createMemoryReplyOutbox();
    const seen: string[] = [];
    let firstFails = true;
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const channel = {
      id: 'api',
      localSend: true,
      send: async (origin: InboundMessage) => {
        if (origin.text === 'm1' && firstFails) {
          firstFails = false;
          await gate;
          throw new Error('status write failed');
        }
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
      const first = deliveryOf(1);
      const second = deliveryOf(2);
      const addedFirst = sender.add(first);
      const addedSecond = sender.add(second);
      expect(await addedSecond).toBe('added');
      release();
      expect(await addedFirst).toBe('added');
      await expect.poll(() => outbox.pending()).toEqual({});
      expect(seen).toEqual([first.origin.id, second.origin.id]);
    } finally {
      await sender.stop({ drainTimeoutMs: 0 });
    }
  });
});
