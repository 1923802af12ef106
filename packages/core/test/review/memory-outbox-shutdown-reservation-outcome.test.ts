import { describe, expect, it } from 'vitest';
import {
  type Delivery,
  type InboundMessage,
  type Outcome,
  createMemoryReplyOutbox,
  createReplySender,
} from '../../src/index.js';
import { message } from '../harness.js';

function deliveryOf(index: number, chat = 'a'): Delivery {
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
  };
}

describe('review: shutdown of a memory outbox while a send is under way past the drain', () => {
  for (const localSend of [false, true]) {
    it(`records an outcome for its message once the send fails (localSend: ${localSend})`, async () => {
      const outbox = createMemoryReplyOutbox();
      const outcomes: Outcome[] = [];
      let release: () => void = () => {};
      const gate = new Promise<void>((resolve) => {
        release = resolve;
      });
      const channel = {
        id: 'api',
        localSend,
        send: async (_origin: InboundMessage) => {
          await gate;
          throw new Error('send failed');
        },
      };
      const sender = createReplySender({
        outbox,
        channel: () => channel,
        policy: () => ({
          sendTimeoutMs: 60_000,
          concurrency: 4,
          maxAgeMs: 60_000,
          retry: { baseDelayMs: 1, maxDelayMs: 1 },
        }),
        outcomes: { record: (outcome) => outcomes.push(outcome) },
        pollMs: 10,
      });
      sender.start();
      const added = sender.add(deliveryOf(1));
      await new Promise((resolve) => setTimeout(resolve, 10));
      // The gateway's shutdown: the drain, then what is still stored is dropped.
      await sender.stop({ drainTimeoutMs: 0 });
      await sender.dropUnsent();
      release();
      await added.catch(() => undefined);
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(outcomes.map((outcome) => outcome.kind)).toEqual(['dropped']);
    });
  }
});
