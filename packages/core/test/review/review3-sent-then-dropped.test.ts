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

describe('review3: a reserved send left behind that SUCCEEDS, whose completed record throws once', () => {
  it('is not recorded dropped/shutdown although the chat got the reply', async () => {
    const outbox = createMemoryReplyOutbox();
    let release: () => void = () => {};
    const waiting = new Promise<void>((resolve) => {
      release = resolve;
    });
    const delivered: string[] = [];
    const outcomes: Outcome[] = [];
    let throws = 1;
    const channel = {
      id: 'api',
      localSend: true,
      send: async (origin: InboundMessage) => {
        await waiting;
        delivered.push(origin.id);
      },
    };
    const sender = createReplySender({
      outbox,
      channel: () => channel,
      policy: () => ({ sendTimeoutMs: 5_000, concurrency: 4, maxAgeMs: 60_000, retry: { baseDelayMs: 1, maxDelayMs: 1 } }),
      outcomes: {
        record: (outcome) => {
          if (throws-- > 0) throw new Error('listener failed');
          outcomes.push(outcome);
        },
      },
      pollMs: 60_000,
    });
    sender.start();
    const added = sender.add(deliveryOf(1));
    await new Promise((resolve) => setTimeout(resolve, 5));
    await sender.stop({ drainTimeoutMs: 20 });
    await sender.dropUnsent();
    release();
    await added.catch(() => undefined);
    expect(delivered).toHaveLength(1);
    expect(outcomes.map((o) => `${o.kind}/${o.reason ?? ''}`)).not.toContain('dropped/shutdown');
  });
});
