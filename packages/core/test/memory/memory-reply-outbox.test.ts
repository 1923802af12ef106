import { describe, expect, it } from 'vitest';
import {
  type ChannelSendOptions,
  type Delivery,
  type InboundMessage,
  type Outcome,
  createMemoryReplyOutbox,
  createReplySender,
} from '../../src/index.js';
import { message } from '../harness.js';

/** A delivery of channel `api` to chat `chat`, due now, answering one message. */
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

/** A sender over an outbox in memory and a channel `api` that sends within the process. */
function sendingBeforeStoring(fails: (origin: InboundMessage) => boolean = () => false) {
  const outbox = createMemoryReplyOutbox();
  const sends: Array<{ id: string; committed?: Promise<boolean> }> = [];
  const outcomes: Array<{ outcome: Outcome; committed?: Promise<boolean> }> = [];
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
      if (fails(origin)) throw new Error('status write failed');
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
    outcomes: { record: (outcome, committed) => outcomes.push({ outcome, committed }) },
    pollMs: 60_000,
  });
  return { outbox, sender, sends, outcomes };
}

describe('memory reply outbox', () => {
  describe('when a channel sends before its delivery is stored (reserve, addEnded)', () => {
    it('sends it, stores nothing, records its outcome as committed and remembers its id', async () => {
      const { outbox, sender, sends, outcomes } = sendingBeforeStoring();
      sender.start();
      try {
        const delivery = deliveryOf(1, 'a', { rememberForMs: 60_000 });
        expect(await sender.add(delivery)).toBe('ended');
        expect(sends.map(({ id }) => id)).toEqual([delivery.origin.id]);
        expect(await sends[0]?.committed).toBe(true);
        expect(outcomes.map(({ outcome }) => outcome.kind)).toEqual(['completed']);
        expect(await outcomes[0]?.committed).toBe(true);
        expect(await outbox.pending()).toEqual({});
        expect(await sender.add(delivery)).toBe('duplicate');
        expect(sends).toHaveLength(1);
      } finally {
        await sender.stop({ drainTimeoutMs: 0 });
      }
    });

    it('holds the chat while reserved: what is added behind it is claimed once it ended', async () => {
      const outbox = createMemoryReplyOutbox();
      const reserved = outbox.reserve?.(deliveryOf(1, 'a'), Date.now());
      if (reserved === undefined || reserved === null || reserved === 'duplicate')
        throw new Error('not reserved');
      expect(outbox.reserve?.(deliveryOf(2, 'a'), Date.now())).toBeNull();
      expect(await outbox.add(deliveryOf(3, 'a'))).toBe('added');
      expect(await outbox.claim('api', Date.now())).toBeNull();
      const due: string[] = [];
      outbox.onDue((channel) => due.push(channel));
      await outbox.addEnded?.(reserved);
      expect(due).toEqual(['api']);
      expect((await outbox.claim('api', Date.now()))?.delivery.id).toBe('d3');
    });

    it("reserves nothing while another chat's due head waits, nor a delivery not due yet", async () => {
      const outbox = createMemoryReplyOutbox();
      expect(outbox.reserve?.(deliveryOf(1, 'a', { notBefore: Date.now() + 60_000 }), Date.now())).toBeNull();
      await outbox.add(deliveryOf(2, 'b'));
      expect(outbox.reserve?.(deliveryOf(3, 'a'), Date.now())).toBeNull();
    });

    it('stores a reservation given back ahead of what its chat got meanwhile (addReserved)', async () => {
      const outbox = createMemoryReplyOutbox();
      const reserved = outbox.reserve?.(deliveryOf(1, 'a', { rememberForMs: 60_000 }), Date.now());
      if (reserved === undefined || reserved === null || reserved === 'duplicate')
        throw new Error('not reserved');
      expect(await outbox.add(deliveryOf(2, 'a'))).toBe('added');
      expect(await outbox.claim('api', Date.now())).toBeNull();

      expect(await outbox.addReserved?.(reserved)).toBe('added');
      const first = await outbox.claim('api', Date.now());
      expect(first?.delivery.id).toBe('d1');
      if (first === null) throw new Error('nothing claimed');
      await outbox.delivered(first);
      expect((await outbox.claim('api', Date.now()))?.delivery.id).toBe('d2');
      expect((await outbox.list('api')).map((delivery) => delivery.id)).toEqual(['d2']);
    });

    it('keeps the reservation and remembers nothing when recording its outcome throws', async () => {
      const outbox = createMemoryReplyOutbox();
      const reserved = outbox.reserve?.(deliveryOf(1, 'a', { rememberForMs: 60_000 }), Date.now());
      if (reserved === undefined || reserved === null || reserved === 'duplicate')
        throw new Error('not reserved');
      const failing = () => {
        throw new Error('listener failed');
      };
      await expect(outbox.addEnded?.(reserved, failing)).rejects.toThrow('listener failed');

      expect(await outbox.addReserved?.(reserved)).toBe('added');
      expect((await outbox.claim('api', Date.now()))?.delivery.id).toBe('d1');
    });
  });

  describe('when a send made before storing fails', () => {
    it('stores the delivery and sends it again, then records its outcome once', async () => {
      let failures = 1;
      const { outbox, sender, sends, outcomes } = sendingBeforeStoring(() => failures-- > 0);
      sender.start();
      try {
        expect(await sender.add(deliveryOf(1))).toBe('added');
        await expect.poll(() => sends.length).toBe(2);
        await expect.poll(() => outbox.pending()).toEqual({});
        expect(await sends[0]?.committed).toBe(false);
        expect(sends[1]?.committed).toBeUndefined();
        expect(outcomes.map(({ outcome }) => outcome.kind)).toEqual(['completed']);
      } finally {
        await sender.stop({ drainTimeoutMs: 0 });
      }
    });
  });
});
