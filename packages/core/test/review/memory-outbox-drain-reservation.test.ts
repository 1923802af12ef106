import { describe, expect, it } from 'vitest';
import {
  type Delivery,
  type InboundMessage,
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

function senderOver(localSend: boolean) {
  const outbox = createMemoryReplyOutbox();
  const seen: string[] = [];
  let failures = 1;
  let release: () => void = () => {};
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  const channel = {
    id: 'api',
    localSend,
    send: async (origin: InboundMessage) => {
      if (failures > 0) {
        failures -= 1;
        await gate;
        throw new Error('send failed once');
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
  return { outbox, sender, seen, release };
}

describe('review: draining a memory outbox while a reserved send is under way', () => {
  for (const localSend of [false, true]) {
    it(`sends again within the drain a delivery whose first send failed (localSend: ${localSend})`, async () => {
      const { outbox, sender, seen, release } = senderOver(localSend);
      sender.start();
      const delivery = deliveryOf(1);
      const added = sender.add(delivery);
      // Shutdown begins while the first send is under way; it fails soon after, well within the drain.
      const stopped = sender.stop({ drainTimeoutMs: 2_000 });
      setTimeout(release, 20);
      await stopped;
      await added;
      // What is still stored now is dropped as `dropped/shutdown` (dropUnsent).
      expect(await outbox.pending()).toEqual({});
      expect(seen).toEqual([delivery.origin.id]);
    });
  }
});
