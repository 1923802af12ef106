import { describe, expect, it } from 'vitest';
import {
  type Delivery,
  type InboundMessage,
  type Outcome,
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

describe('review3: a reserved send left behind fails and recording its dropped outcome throws', () => {
  it('does not leave the reservation (chat and id) held forever', async () => {
    const outbox = createMemoryReplyOutbox();
    let release: () => void = () => {};
    const waiting = new Promise<void>((resolve) => {
      release = resolve;
    });
    const outcomes: Outcome[] = [];
    const channel = {
      id: 'api',
      localSend: true,
      send: async (_origin: InboundMessage) => {
        await waiting;
        throw new Error('send failed');
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
          if (outcome.kind === 'dropped') throw new Error('listener failed');
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
    const result = await added.then(
      (r) => r,
      (err: unknown) => `rejected: ${(err as Error).message}`,
    );
    // Whatever the add answered, the reservation must be over: the id free, the chat free.
    const again = outbox.reserve?.(deliveryOf(1), Date.now());
    const other = outbox.reserve?.(deliveryOf(2), Date.now());
    expect({ result, again: again === 'duplicate' ? 'duplicate' : again === null ? null : 'claim', other: other === null ? null : 'claim' })
      .toEqual({ result: 'ended', again: 'claim', other: 'claim' });
  });
});
