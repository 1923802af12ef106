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
    id: `d${index}`, channel: 'api', chat, origin,
    messages: [{ message: origin, session: chat, pipeline: 'p', attempt: 1 }],
    turnId: `turn-${index}`, replies: [{ text: `r${index}` }], ownsOutcome: true,
    createdAt: Date.now(), attempts: 0, notBefore: 0,
  };
}

describe('review3: start after a stop that left a send behind', () => {
  it('a later reserved send that fails is stored and sent again, not dropped/shutdown', async () => {
    const outbox = createMemoryReplyOutbox();
    let release: () => void = () => {};
    const waiting = new Promise<void>((resolve) => { release = resolve; });
    const outcomes: Outcome[] = [];
    let failNext = false;
    const channel = {
      id: 'api', localSend: true,
      send: async (origin: InboundMessage) => {
        if (origin.id.endsWith('1')) await waiting;
        console.log('send', origin.id, failNext);
        if (failNext) { failNext = false; throw new Error('send failed'); }
      },
    };
    const sender = createReplySender({
      outbox, channel: () => channel,
      policy: () => ({ sendTimeoutMs: 5_000, concurrency: 4, maxAgeMs: 60_000, retry: { baseDelayMs: 1, maxDelayMs: 1 } }),
      outcomes: { record: (outcome) => { outcomes.push(outcome); } },
      pollMs: 60_000,
    });
    sender.start();
    const first = sender.add(deliveryOf(1, 'a'));
    await new Promise((resolve) => setTimeout(resolve, 5));
    await sender.stop({ drainTimeoutMs: 20 });
    release();
    await first;
    console.log("first", outcomes.map((o) => o.kind + "/" + o.reason));
    outcomes.length = 0;
    sender.start();
    failNext = true;
    await sender.add(deliveryOf(2, 'b'));
    await new Promise((resolve) => setTimeout(resolve, 50));
    await sender.stop({ drainTimeoutMs: 100 });
    console.log("second", outcomes.map((o) => o.kind + "/" + o.reason), await outbox.pending());
    expect(outcomes.map((o) => `${o.kind}/${o.reason ?? ''}`)).toEqual(['completed/']);
  });
});
