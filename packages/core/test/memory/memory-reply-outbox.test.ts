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

/** What the channel and the outcome sink of `sendingBeforeStoring` do. */
interface Behaviour {
  /** Whether a send fails (after `waits`). */
  fails?: (origin: InboundMessage) => boolean;
  /** What a send waits for before it ends, if anything. */
  waits?: (origin: InboundMessage) => Promise<void> | undefined;
  /** Called before an outcome is kept: it may throw, as a listener of the sink can. */
  records?: (outcome: Outcome) => void;
}

/** A gate that a test opens. */
function gate(): { opened: Promise<void>; open: () => void } {
  let open: () => void = () => {};
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { opened, open };
}

/** A sender over an outbox in memory and a channel `api` that sends within the process. */
function sendingBeforeStoring(behaviour: Behaviour = {}) {
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
      await behaviour.waits?.(origin);
      if (behaviour.fails?.(origin) === true) throw new Error('status write failed');
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
      record: (outcome, committed) => {
        behaviour.records?.(outcome);
        outcomes.push({ outcome, committed });
      },
    },
    pollMs: 60_000,
  });
  return { outbox, sender, sends, outcomes };
}

/** What the chat saw: the ids of the sends whose write did not fail (the HTTP channel shows no other). */
async function seenBy(sends: ReadonlyArray<{ id: string; committed?: Promise<boolean> }>): Promise<string[]> {
  const seen: string[] = [];
  for (const send of sends) if ((await send.committed) !== false) seen.push(send.id);
  return seen;
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

    it('answers duplicate to the same id added, added and claimed, or reserved while it is reserved', async () => {
      const outbox = createMemoryReplyOutbox();
      const delivery = deliveryOf(1, 'a', { rememberForMs: 60_000 });
      const reserved = outbox.reserve?.(delivery, Date.now());
      if (reserved === undefined || reserved === null || reserved === 'duplicate')
        throw new Error('not reserved');
      expect(await outbox.add({ ...delivery })).toBe('duplicate');
      expect(await outbox.addAndClaim({ ...delivery }, Date.now())).toEqual({
        result: 'duplicate',
        claim: null,
      });
      expect(outbox.reserve?.({ ...delivery }, Date.now())).toBe('duplicate');
      expect(await outbox.pending()).toEqual({});

      // Its own send failed: the reservation given back is stored, once.
      expect(await outbox.addReserved?.(reserved)).toBe('added');
      expect((await outbox.list('api')).map(({ id }) => id)).toEqual(['d1']);
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
      const { outbox, sender, sends, outcomes } = sendingBeforeStoring({ fails: () => failures-- > 0 });
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

    it('sends it before a delivery of its chat added while it was under way', async () => {
      const first = deliveryOf(1);
      const second = deliveryOf(2);
      const firstSend = gate();
      let firstFails = true;
      const { outbox, sender, sends } = sendingBeforeStoring({
        waits: (origin) => (origin.id === first.origin.id && firstFails ? firstSend.opened : undefined),
        fails: (origin) => {
          if (origin.id !== first.origin.id || !firstFails) return false;
          firstFails = false;
          return true;
        },
      });
      sender.start();
      try {
        const addedFirst = sender.add(first);
        expect(await sender.add(second)).toBe('added');
        firstSend.open();
        expect(await addedFirst).toBe('added');
        await expect.poll(() => outbox.pending()).toEqual({});
        expect(await seenBy(sends)).toEqual([first.origin.id, second.origin.id]);
      } finally {
        await sender.stop({ drainTimeoutMs: 0 });
      }
    });
  });

  describe('when the same delivery is added again while its send made before storing is under way', () => {
    it('answers the second add duplicate and sends the delivery once', async () => {
      const firstSend = gate();
      const { outbox, sender, sends } = sendingBeforeStoring({ waits: () => firstSend.opened });
      sender.start();
      try {
        // A replayed dead letter's answer, replayed twice: its id is derived from the dead letter.
        const delivery = deliveryOf(1, 'a', { rememberForMs: 60_000 });
        const first = sender.add(delivery);
        expect(await sender.add({ ...delivery })).toBe('duplicate');
        firstSend.open();
        expect(await first).toBe('ended');
        expect(await outbox.pending()).toEqual({});
        expect(sends.map(({ id }) => id)).toEqual([delivery.origin.id]);
      } finally {
        await sender.stop({ drainTimeoutMs: 0 });
      }
    });
  });

  describe('when a listener of the outcome throws while a delivery sent before storing is stored ended', () => {
    it('stores it to send again, and the chat sees it once and its message gets one outcome', async () => {
      let throws = 1;
      const { outbox, sender, sends, outcomes } = sendingBeforeStoring({
        records: () => {
          if (throws-- > 0) throw new Error('listener failed');
        },
      });
      sender.start();
      try {
        // A replayed dead letter's answer: its id is remembered once it ended.
        const delivery = deliveryOf(1, 'a', { rememberForMs: 60_000 });
        await sender.add(delivery).catch(() => undefined);
        await expect.poll(() => outbox.pending()).toEqual({});
        expect(await seenBy(sends)).toEqual([delivery.origin.id]);
        expect(outcomes.map(({ outcome }) => outcome.kind)).toEqual(['completed']);
      } finally {
        await sender.stop({ drainTimeoutMs: 0 });
      }
    });
  });
});
