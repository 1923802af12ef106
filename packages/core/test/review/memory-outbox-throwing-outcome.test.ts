import { describe, expect, it } from 'vitest';
import {
  type ChannelSendOptions,
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

describe('review: memory outbox, an outcome listener that throws while a reserved delivery is stored ended', () => {
  it('still gets the reply to the chat once (a delivery whose id is remembered)', async () => {
    const outbox = createMemoryReplyOutbox();
    const sends: Array<{ id: string; committed?: Promise<boolean> }> = [];
    let throws = 1;
    const recorded: string[] = [];
    const channel = {
      id: 'api',
      localSend: true,
      send: async (
        origin: InboundMessage,
        _replies: unknown,
        _signal: AbortSignal,
        options?: ChannelSendOptions,
      ) => {
        sends.push({ id: origin.id, committed: options?.committed });
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
      outcomes: {
        record: (outcome) => {
          if (throws-- > 0) throw new Error('listener failed');
          recorded.push(outcome.kind);
        },
      },
      pollMs: 10,
    });
    sender.start();
    try {
      // A replayed dead letter's answer: its id is remembered once it ended.
      const delivery = deliveryOf(1, 'a', { rememberForMs: 60_000 });
      const result = await sender.add(delivery).catch((err: unknown) => err);
      await expect.poll(() => outbox.pending()).toEqual({});
      // What the chat saw: the sends whose commit did not fail (the HTTP channel shows nothing else).
      const seen: string[] = [];
      for (const send of sends) if ((await send.committed) !== false) seen.push(send.id);
      expect({ result, seen, recorded }).toEqual({
        result: expect.anything(),
        seen: [delivery.origin.id],
        recorded: ['completed'],
      });
    } finally {
      await sender.stop({ drainTimeoutMs: 0 });
    }
  });
});
