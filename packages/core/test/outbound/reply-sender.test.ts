import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  type ChannelSendOptions,
  type Delivery,
  type InboundMessage,
  type Outcome,
  type OutcomeSink,
  type OutboundPolicy,
  type Reply,
  type ReplyOutbox,
  SwitchboardError,
  createMemoryReplyOutbox,
  createOutcomeBus,
  createReplySender,
} from '../../src/index.js';
import { message, settle } from '../harness.js';

const POLICY: OutboundPolicy = {
  sendTimeoutMs: 30_000,
  concurrency: 8,
  maxAgeMs: 60_000,
  retry: { baseDelayMs: 1_000, maxDelayMs: 10_000 },
};

interface Send {
  chat: string;
  text: string;
  /** What the sender told the channel: the turn's answer, or a reply no outcome follows. */
  answer: boolean | undefined;
  finish(error?: unknown): void;
}

/**
 * An outbox and a sender over channel `tg` whose sends wait in `sends` until the test ends them;
 * `localSend`: the channel sends within the process (the sender sends before storing).
 */
function setup(
  policy: Partial<OutboundPolicy> = {},
  wrap: (outbox: ReplyOutbox) => ReplyOutbox = (o) => o,
  localSend = false,
  recordFails: (outcome: Outcome) => boolean = () => false,
) {
  const outbox = wrap(createMemoryReplyOutbox());
  const outcomes: Outcome[] = [];
  const bus = createOutcomeBus();
  bus.subscribe((outcome) => outcomes.push(outcome));
  // A sink that may throw, as a custom one can (the bus itself catches its listeners' errors).
  const sink: OutcomeSink = {
    record: (outcome, committed) => {
      if (recordFails(outcome)) throw new Error('recording failed');
      bus.record(outcome, committed);
    },
  };
  const sends: Send[] = [];
  const channel = {
    id: 'tg',
    localSend,
    send: (
      origin: InboundMessage,
      replies: readonly Reply[],
      _signal: AbortSignal,
      options?: ChannelSendOptions,
    ) =>
      new Promise<void>((resolve, reject) => {
        sends.push({
          chat: origin.chat.id,
          text: replies.map((reply) => reply.text).join(),
          answer: options?.answer,
          finish: (error) => (error === undefined ? resolve() : reject(error)),
        });
      }),
  };
  const sender = createReplySender({
    outbox,
    channel: (id) => (id === 'tg' ? channel : undefined),
    policy: (id) => (id === 'tg' ? { ...POLICY, ...policy } : undefined),
    outcomes: sink,
    random: () => 0.5,
  });
  /** A delivery to chat `chat` created now, answering one message. */
  const deliveryOf = (index: number, chat = 'a', ownsOutcome = true): Delivery => {
    const origin = message(chat, `m${index}`);
    return {
      id: `d${index}`,
      channel: 'tg',
      chat,
      origin,
      messages: ownsOutcome ? [{ message: origin, session: chat, pipeline: 'p', attempt: 1 }] : [],
      turnId: `turn-${index}`,
      replies: [{ text: `r${index}` }],
      ownsOutcome,
      createdAt: Date.now(),
      attempts: 0,
      notBefore: 0,
    };
  };
  const add = (index: number, chat = 'a', ownsOutcome = true) =>
    outbox.add(deliveryOf(index, chat, ownsOutcome));
  return { outbox, outcomes, sends, sender, add, deliveryOf };
}

/**
 * Starts the sender, adds delivery 1, and stops the sender while its send is under way until
 * the 5 s drain has passed: the send is left behind. Answers the add, which ends with the send.
 */
async function leftBehind({
  sender,
  deliveryOf,
}: ReturnType<typeof setup>): Promise<{ added: Promise<unknown> }> {
  sender.start();
  const added = sender.add(deliveryOf(1));
  await settle();
  const stopped = sender.stop({ drainTimeoutMs: 5_000 });
  await vi.advanceTimersByTimeAsync(5_000);
  await stopped;
  return { added };
}

/** The two ways a delivery is sent: claimed from the outbox, or before it is stored (`localSend`). */
const SENDS = [
  { how: 'sent from the outbox', localSend: false },
  { how: 'sent before it is stored', localSend: true },
];

describe('reply sender', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  describe('when one chat has several deliveries and another chat one', () => {
    it('sends one at a time per chat, in order, the chats in parallel, and completes each message once sent', async () => {
      const { outcomes, sends, sender, add } = setup();
      sender.start();
      await add(1, 'a');
      await add(2, 'a');
      await add(3, 'b');
      await settle();
      expect(sends.map((send) => send.text)).toEqual(['r1', 'r3']);
      expect(outcomes).toEqual([]);
      sends[0]?.finish();
      await settle();
      expect(sends.map((send) => send.text)).toEqual(['r1', 'r3', 'r2']);
      expect(outcomes.map((outcome) => [outcome.kind, outcome.replies])).toEqual([
        ['completed', [{ text: 'r1' }]],
      ]);
    });

    it('sends to no more chats at once than its concurrency', async () => {
      const { sends, sender, add } = setup({ concurrency: 2 });
      sender.start();
      for (const chat of ['a', 'b', 'c']) await add(chat.charCodeAt(0), chat);
      await settle();
      expect(sends.map((send) => send.chat)).toEqual(['a', 'b']);
      sends[1]?.finish();
      await settle();
      expect(sends.map((send) => send.chat)).toEqual(['a', 'b', 'c']);
    });
  });

  describe('when an add comes while a claim of the channel is on its way', () => {
    it('counts that claim against the concurrency: the add claims nothing, and one send runs at once', async () => {
      let open = () => {};
      const gate = new Promise<void>((resolve) => {
        open = resolve;
      });
      const { sends, sender, add, deliveryOf } = setup({ concurrency: 1 }, (outbox) => ({
        ...outbox,
        claim: async (channel, nowMs) => {
          await gate;
          return outbox.claim(channel, nowMs);
        },
      }));
      sender.start();
      await add(1, 'a');
      await settle();
      expect(await sender.add(deliveryOf(2, 'b'))).toBe('added');
      await settle();
      expect(sends).toEqual([]);
      open();
      await settle();
      expect(sends.map((send) => send.text)).toEqual(['r1']);
      sends[0]?.finish();
      await settle();
      expect(sends.map((send) => send.text)).toEqual(['r1', 'r2']);
    });
  });

  describe('when it adds what it sends, and removes what it sent', () => {
    it('claims through the add and the removal, and asks the outbox again only when more is due', async () => {
      const calls: string[] = [];
      const { outcomes, sends, sender, add, deliveryOf } = setup({}, (outbox) => ({
        ...outbox,
        claim: (channel, nowMs) => {
          calls.push('claim');
          return outbox.claim(channel, nowMs);
        },
      }));
      sender.start();
      await settle();
      expect(await sender.add(deliveryOf(1, 'a'))).toBe('added');
      await sender.add(deliveryOf(2, 'a'));
      await sender.add(deliveryOf(3, 'b'));
      await settle();
      expect(sends.map((send) => send.text)).toEqual(['r1', 'r3']);
      sends[0]?.finish();
      await settle();
      expect(sends.map((send) => send.text)).toEqual(['r1', 'r3', 'r2']);
      for (const send of sends) send.finish();
      await settle();
      expect(outcomes.map((outcome) => outcome.kind)).toEqual(['completed', 'completed', 'completed']);
      expect(calls).toEqual([]);

      // Added by another: announced, claimed once, and not asked for again after its send.
      await add(4, 'c');
      await settle();
      sends[3]?.finish();
      await settle();
      expect(sends.map((send) => send.text)).toEqual(['r1', 'r3', 'r2', 'r4']);
      expect(calls).toEqual(['claim']);
    });
  });

  describe("when a delivery is the turn's answer, and when it is a dead-letter reply", () => {
    it('tells the channel which: only the answer is followed by an outcome carrying its replies', async () => {
      const { outcomes, sends, sender, add } = setup();
      sender.start();
      await add(1, 'a');
      await add(2, 'b', false);
      await settle();
      expect(sends.map((send) => [send.text, send.answer])).toEqual([
        ['r1', true],
        ['r2', false],
      ]);
      for (const send of sends) send.finish();
      await settle();
      expect(outcomes.map((outcome) => outcome.replies)).toEqual([[{ text: 'r1' }]]);
    });
  });

  describe('when a send fails with a retryable error', () => {
    it("tries again after the platform's retry_after, then records the outcome once delivered", async () => {
      const { outcomes, sends, sender, add } = setup();
      sender.start();
      await add(1);
      await settle();
      sends[0]?.finish(
        new SwitchboardError('SB_CHANNEL_RATE_LIMITED', { retryable: true, retryAfterMs: 5_000 }),
      );
      await settle();
      await vi.advanceTimersByTimeAsync(4_000);
      expect(sends).toHaveLength(1);
      await vi.advanceTimersByTimeAsync(1_000);
      expect(sends).toHaveLength(2);
      sends[1]?.finish();
      await settle();
      expect(outcomes.map((outcome) => outcome.kind)).toEqual(['completed']);
    });

    it('gives it up as a dead letter delivery_failed, with its replies, once the next try would pass max_age', async () => {
      const { outbox, outcomes, sends, sender, add } = setup({ maxAgeMs: 3_500 });
      sender.start();
      await add(1);
      const failure = () =>
        new SwitchboardError('SB_CHANNEL_UNREACHABLE', { retryable: true, message: 'down' });
      for (let attempt = 0; outcomes.length === 0 && attempt < 10; attempt++) {
        await settle();
        sends.at(-1)?.finish(failure());
        await vi.advanceTimersByTimeAsync(1_000);
      }
      // Tries at 0 s, 1 s (backoff 1 s) and 3 s (backoff 2 s); the next would be at 7 s.
      expect(sends).toHaveLength(3);
      expect(outcomes).toMatchObject([
        {
          kind: 'dead_lettered',
          reason: 'delivery_failed',
          error: { code: 'SB_CHANNEL_UNREACHABLE', message: 'down' },
          undelivered: { replies: [{ text: 'r1' }] },
        },
      ]);
      expect(await outbox.pending()).toEqual({});
    });
  });

  describe("when the outbox of this process fails to write a send's retry once", () => {
    it('writes it again, so the chat is not left claimed, and sends again after the backoff', async () => {
      let failures = 1;
      const { outcomes, sends, sender, add } = setup({}, (outbox) => ({
        ...outbox,
        retry: (claim, notBeforeMs, error) =>
          failures-- > 0
            ? Promise.reject(new Error('SQLITE_IOERR: disk I/O error'))
            : outbox.retry(claim, notBeforeMs, error),
      }));
      sender.start();
      await add(1);
      await settle();
      sends[0]?.finish(
        new SwitchboardError('SB_CHANNEL_RATE_LIMITED', { retryable: true, retryAfterMs: 1_000 }),
      );
      await settle();
      await vi.advanceTimersByTimeAsync(5_000);
      expect(sends).toHaveLength(2);
      sends[1]?.finish();
      await settle();
      expect(outcomes.map((outcome) => outcome.kind)).toEqual(['completed']);
    });
  });

  describe('when a send fails with an error retrying cannot fix', () => {
    it('dead-letters the delivery at once', async () => {
      const { outcomes, sends, sender, add } = setup();
      sender.start();
      await add(1);
      await settle();
      sends[0]?.finish(new SwitchboardError('SB_CHANNEL_SEND_FAILED', { message: 'chat not found' }));
      await settle();
      expect(outcomes.map((outcome) => [outcome.kind, outcome.reason])).toEqual([
        ['dead_lettered', 'delivery_failed'],
      ]);
    });
  });

  describe('when it stops with an outbox in memory', () => {
    it('goes on sending what is queued behind the send under way while the drain lasts', async () => {
      const { outcomes, sends, sender, add } = setup();
      sender.start();
      await add(1, 'a');
      await add(2, 'a');
      await settle();
      const stopped = sender.stop({ drainTimeoutMs: 5_000 });
      sends[0]?.finish();
      await settle();
      sends[1]?.finish();
      await stopped;
      await sender.dropUnsent();
      expect(sends).toHaveLength(2);
      expect(outcomes.map((outcome) => [outcome.kind, outcome.reason, outcome.replies])).toEqual([
        ['completed', undefined, [{ text: 'r1' }]],
        ['completed', undefined, [{ text: 'r2' }]],
      ]);
    });

    it('drops what is left at the drain deadline, the send under way included, each message once', async () => {
      const { outcomes, sends, sender, add } = setup();
      sender.start();
      await add(1, 'a');
      await add(2, 'a');
      await settle();
      const stopped = sender.stop({ drainTimeoutMs: 5_000 });
      await vi.advanceTimersByTimeAsync(5_000);
      await stopped;
      await sender.dropUnsent();
      // Late, the slow send ends: its message already has its outcome.
      sends[0]?.finish();
      await settle();
      expect(sends).toHaveLength(1);
      expect(outcomes.map((outcome) => [outcome.kind, outcome.reason, outcome.replies])).toEqual([
        ['dropped', 'shutdown', [{ text: 'r1' }]],
        ['dropped', 'shutdown', [{ text: 'r2' }]],
      ]);
    });

    for (const { how, localSend } of SENDS) {
      it(`waits within the drain for a delivery ${how} whose send fails, and sends it again`, async () => {
        const { outbox, outcomes, sends, sender, deliveryOf } = setup({}, undefined, localSend);
        sender.start();
        const added = sender.add(deliveryOf(1));
        await settle();
        const stopped = sender.stop({ drainTimeoutMs: 5_000 });
        sends[0]?.finish(new Error('send failed'));
        expect(await added).toBe('added');
        // The backoff of a send from the outbox; within the drain.
        await vi.advanceTimersByTimeAsync(2_000);
        sends[1]?.finish();
        await stopped;
        await sender.dropUnsent();
        expect(sends).toHaveLength(2);
        expect(await outbox.pending()).toEqual({});
        expect(outcomes.map((outcome) => outcome.kind)).toEqual(['completed']);
      });

      for (const failsAfter of ['stop', 'dropUnsent']) {
        it(`drops a delivery ${how} left behind at the drain deadline whose send fails after ${failsAfter}, its message once`, async () => {
          const sending = setup({}, undefined, localSend);
          const { outcomes, sends, sender } = sending;
          const { added } = await leftBehind(sending);
          if (failsAfter === 'dropUnsent') await sender.dropUnsent();
          sends[0]?.finish(new Error('send failed'));
          await added;
          await settle();
          if (failsAfter === 'stop') await sender.dropUnsent();
          expect(sends).toHaveLength(1);
          expect(outcomes.map((outcome) => [outcome.kind, outcome.reason, outcome.replies])).toEqual([
            ['dropped', 'shutdown', [{ text: 'r1' }]],
          ]);
        });
      }
    }
  });

  describe('when it stops with a durable outbox while a send is under way', () => {
    for (const { how, localSend } of SENDS) {
      it(`keeps a delivery ${how} left behind whose send fails stored for the next start, with no outcome`, async () => {
        const sending = setup({}, (memory) => ({ ...memory, durable: true }), localSend);
        const { outbox, outcomes, sends, sender } = sending;
        const { added } = await leftBehind(sending);
        await sender.dropUnsent();
        sends[0]?.finish(new Error('send failed'));
        await added;
        await settle();
        expect(await outbox.pending()).toEqual({ tg: 1 });
        expect(outcomes).toEqual([]);
      });
    }
  });
  describe('when a send made before storing is left behind at the drain deadline', () => {
    it('stores its delivery, never holding its chat, when its send fails and recording it dropped throws', async () => {
      const sending = setup({}, undefined, true, (outcome) => outcome.kind === 'dropped');
      const { outbox, sends, sender } = sending;
      const { added } = await leftBehind(sending);
      await sender.dropUnsent();
      sends[0]?.finish(new Error('send failed'));
      expect(await added).toBe('added');
      // Stored, as any other: not a reservation held for good.
      expect(await outbox.pending()).toEqual({ tg: 1 });
      expect((await outbox.claim('tg', Date.now()))?.delivery.id).toBe('d1');
    });

    it('is never recorded dropped once its send succeeded, when recording it completed throws', async () => {
      let failures = 1;
      const sending = setup({}, undefined, true, (outcome) => outcome.kind === 'completed' && failures-- > 0);
      const { outcomes, sends, sender } = sending;
      const { added } = await leftBehind(sending);
      await sender.dropUnsent();
      sends[0]?.finish();
      await added;
      await settle();
      expect(sends).toHaveLength(1);
      expect(outcomes.map((outcome) => outcome.kind)).not.toContain('dropped');
    });

    it('leaves no mark on the next start: a send failing then is stored and sent again', async () => {
      const sending = setup({}, undefined, true);
      const { outcomes, sends, sender, deliveryOf } = sending;
      const { added } = await leftBehind(sending);
      sends[0]?.finish();
      await added;
      outcomes.length = 0;
      sender.start();
      const second = sender.add(deliveryOf(2, 'b'));
      await settle();
      sends[1]?.finish(new Error('send failed'));
      expect(await second).toBe('added');
      await vi.advanceTimersByTimeAsync(2_000);
      sends[2]?.finish();
      await settle();
      expect(sends.map((send) => send.text)).toEqual(['r1', 'r2', 'r2']);
      expect(outcomes.map((outcome) => outcome.kind)).toEqual(['completed']);
      await sender.stop({ drainTimeoutMs: 0 });
    });
  });

  describe('when a delivery is added through another write (a pool settlement storing it)', () => {
    /** A setup whose outbox (made by `wrap` of the one in memory) counts the claims it is asked for. */
    function counted(
      policy: Partial<OutboundPolicy> = {},
      wrap: (outbox: ReplyOutbox) => ReplyOutbox = (outbox) => outbox,
    ) {
      let claims = 0;
      const parts = setup(policy, (inner) => {
        const outbox = wrap(inner);
        return {
          ...outbox,
          claim: (channel, nowMs) => {
            claims += 1;
            return outbox.claim(channel, nowMs);
          },
        };
      });
      return { ...parts, claims: () => claims };
    }

    it("sends with the claim that write made, asking the outbox nothing, and answers the write's result", async () => {
      const { outbox, sends, sender, deliveryOf, claims } = counted();
      sender.start();
      await settle();
      const delivery = deliveryOf(1);
      const answered = await sender.addThrough(delivery, async (claimAt, stored) => {
        expect(claimAt).toBe(Date.now());
        stored(await outbox.addAndClaim(delivery, claimAt as number));
        return 'settled';
      });
      await settle();
      expect(answered).toBe('settled');
      expect(sends.map((send) => send.text)).toEqual(['r1']);
      expect(claims()).toBe(0);
    });

    it('asks that write for no claim while every send of the channel is taken, and sends it after', async () => {
      const { outbox, sends, sender, add, deliveryOf } = counted({ concurrency: 1 });
      sender.start();
      await add(1, 'a');
      await settle();
      expect(sends.map((send) => send.text)).toEqual(['r1']);
      const delivery = deliveryOf(2, 'b');
      let askedAt: number | undefined = -1;
      await sender.addThrough(delivery, async (claimAt, stored) => {
        askedAt = claimAt;
        stored({ result: await outbox.add(delivery), claim: null });
      });
      expect(askedAt).toBeUndefined();
      sends[0]?.finish();
      await settle();
      expect(sends.map((send) => send.text)).toEqual(['r1', 'r2']);
    });

    it('claims once the due delivery that write left unclaimed, as soon as it freed its send, not at the next poll', async () => {
      // No announcements reach the sender: only its own claims find what is due.
      const { outbox, sends, sender, deliveryOf, claims } = counted({ concurrency: 1 }, (inner) => ({
        ...inner,
        onDue: () => () => {},
      }));
      sender.start();
      await settle();
      const claimsBefore = claims();
      await outbox.add(deliveryOf(1, 'a'));
      const delivery = deliveryOf(2, 'b');
      // As a shared pool's settlement does: it stores the delivery and claims none of another chat.
      await sender.addThrough(delivery, async (_claimAt, stored) => {
        stored({ result: await outbox.add(delivery), claim: null, dueUnclaimed: true });
      });
      await settle();
      expect(sends.map((send) => send.text)).toEqual(['r1']);
      expect(claims() - claimsBefore).toBe(1);
      sends[0]?.finish();
      await settle();
      expect(sends.map((send) => send.text)).toEqual(['r1', 'r2']);
    });

    it('asks the outbox nothing more when that write stored the delivery behind its busy chat', async () => {
      const { outbox, sends, sender, add, deliveryOf, claims } = counted({ concurrency: 2 });
      sender.start();
      await add(1, 'a');
      await settle();
      expect(sends.map((send) => send.text)).toEqual(['r1']);
      const claimsBefore = claims();
      const delivery = deliveryOf(2, 'a');
      await sender.addThrough(delivery, async (claimAt, stored) => {
        const added = await outbox.addAndClaim(delivery, claimAt as number);
        expect(added).toEqual({ result: 'added', claim: null });
        stored(added);
      });
      await settle();
      expect(claims()).toBe(claimsBefore);
      // Its removal claims the next one.
      sends[0]?.finish();
      await settle();
      expect(sends.map((send) => send.text)).toEqual(['r1', 'r2']);
      expect(claims()).toBe(claimsBefore);
    });

    it('claims what was announced while that write held the only send, once it freed it, not at the next poll', async () => {
      const { sends, sender, add, deliveryOf, claims } = counted({ concurrency: 1 });
      sender.start();
      await settle();
      const claimsBefore = claims();
      const delivery = deliveryOf(1, 'a');
      await sender.addThrough(delivery, async (_claimAt, stored) => {
        // Announced by another replica while this write holds the send: no slot to claim it with.
        await add(2, 'b');
        await settle();
        expect(claims()).toBe(claimsBefore);
        // The write's delivery is already sent elsewhere: it claims nothing.
        stored({ result: 'duplicate', claim: null });
      });
      await settle();
      expect(sends.map((send) => send.text)).toEqual(['r2']);
      expect(claims() - claimsBefore).toBe(1);
    });

    it('frees the send it held when that write fails: the next add claims and sends at once', async () => {
      const { sends, sender, deliveryOf } = counted({ concurrency: 1 });
      sender.start();
      await settle();
      const failed = sender.addThrough(deliveryOf(1, 'a'), async () => {
        throw new SwitchboardError('SB_STORE_UNAVAILABLE', { message: 'redis away' });
      });
      await expect(failed).rejects.toMatchObject({ code: 'SB_STORE_UNAVAILABLE' });
      await settle();
      expect(await sender.add(deliveryOf(2, 'b'))).toBe('added');
      await settle();
      expect(sends.map((send) => send.text)).toEqual(['r2']);
    });
  });
});
