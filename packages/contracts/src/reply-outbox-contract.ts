import { describe, expect, it } from 'vitest';
import type { Delivery, DeliveryClaim, ReplyOutbox } from '@switchboard/core';
import { queuedMessageFixture, type StoreFactory, useStoreUnderTest } from './store-harness.js';

const CHANNEL = 'tg';

/**
 * A delivery of `chat` (the session key its origin has) exercising every field: an origin with a
 * thread and elements, two answered messages, several replies and a draft.
 */
export function deliveryFixture(index: number, overrides: Partial<Delivery> = {}): Delivery {
  const queued = queuedMessageFixture(index);
  const { raw: _raw, ...origin } = queued.message;
  return {
    id: `01J3000000000000000${String(index).padStart(7, '0')}`,
    channel: CHANNEL,
    chat: queued.session,
    origin,
    messages: [
      { message: origin, session: queued.session, pipeline: 'assistant', rule: 'support-group', attempt: 1 },
      {
        message: { ...origin, id: `${origin.id}b` },
        session: queued.session,
        pipeline: 'assistant',
        attempt: 2,
      },
    ],
    turnId: `turn-${index}`,
    replies: [{ text: `answer ${index}` }, { text: 'and more' }],
    draft: `draft-${index}`,
    ownsOutcome: true,
    createdAt: queued.acceptedAt,
    attempts: 0,
    notBefore: 0,
    ...overrides,
  };
}

const idOf = (claim: DeliveryClaim | null) => claim?.delivery.id ?? null;

/** The behaviour every `ReplyOutbox` must show (ports/reply-outbox.ts); run it once per implementation. */
export function replyOutboxContract(name: string, factory: StoreFactory<ReplyOutbox>): void {
  describe(`ReplyOutbox contract: ${name}`, () => {
    const subject = useStoreUnderTest(factory);
    const claim = (channel = CHANNEL) => subject.store.claim(channel, subject.now());

    describe('when nothing was added', () => {
      it('claims nothing and counts nothing pending', async () => {
        expect(await claim()).toBeNull();
        expect(await subject.store.pending()).toEqual({});
        expect(await subject.store.list(CHANNEL)).toEqual([]);
      });
    });

    describe('when a delivery is added', () => {
      it('hands it out whole, with a token, and counts it pending', async () => {
        const delivery = deliveryFixture(1);
        expect(await subject.store.add(delivery)).toBe('added');
        expect(await subject.store.pending()).toEqual({ [CHANNEL]: 1 });
        const claimed = await claim();
        expect(claimed?.delivery).toEqual(delivery);
        expect(claimed?.token).toEqual(expect.any(String));
      });

      it('hands out replies with attachments as added, their data byte for byte', async () => {
        const data = Buffer.from(Array.from({ length: 256 }, (_, byte) => byte)).toString('base64');
        const delivery = deliveryFixture(1, {
          replies: [
            {
              text: 'two files',
              attachments: [
                { type: 'image', data, name: 'bytes.png', mime_type: 'image/png' },
                { type: 'file', url: 'https://example.com/report.pdf' },
              ],
            },
            { attachments: [{ type: 'audio', data }] },
          ],
        });
        await subject.store.add(delivery);
        expect((await claim())?.delivery).toEqual(delivery);
      });

      it('answers duplicate to a second add with its id and stores it once', async () => {
        await subject.store.add(deliveryFixture(1));
        expect(await subject.store.add(deliveryFixture(1, { replies: [{ text: 'other' }] }))).toBe(
          'duplicate',
        );
        expect(await subject.store.list(CHANNEL)).toEqual([deliveryFixture(1)]);
      });

      it('keeps what was added when the caller mutates its object afterwards', async () => {
        const delivery = deliveryFixture(1);
        await subject.store.add(delivery);
        (delivery.replies[0] as { text: string }).text = 'changed';
        expect((await claim())?.delivery.replies[0]?.text).toBe('answer 1');
      });

      it('tells the onDue listeners which channel has work', async () => {
        const woken: string[] = [];
        const stop = subject.store.onDue((channel) => woken.push(channel));
        await subject.store.add(deliveryFixture(1, { channel: 'sl' }));
        stop();
        await subject.store.add(deliveryFixture(2));
        expect(woken).toEqual(['sl']);
      });
    });

    describe('when one chat has several deliveries', () => {
      it('hands them out one at a time, in the order they were added', async () => {
        // Descending ids prove the order is the add order, not an id sort.
        for (const index of [3, 2, 1]) await subject.store.add(deliveryFixture(index));
        const first = await claim();
        expect(idOf(first)).toBe(deliveryFixture(3).id);
        expect(await claim()).toBeNull();
        expect(await subject.store.delivered(first as DeliveryClaim)).toBe('settled');
        const second = await claim();
        expect(idOf(second)).toBe(deliveryFixture(2).id);
        expect(await subject.store.failed(second as DeliveryClaim)).toBe('settled');
        expect(idOf(await claim())).toBe(deliveryFixture(1).id);
        expect(await subject.store.pending()).toEqual({ [CHANNEL]: 1 });
      });

      it('holds the chat back while its head waits on backoff', async () => {
        await subject.store.add(deliveryFixture(1));
        await subject.store.add(deliveryFixture(2));
        const first = (await claim()) as DeliveryClaim;
        const error = { code: 'SB_CHANNEL_UNREACHABLE', message: 'down' };
        expect(await subject.store.retry(first, subject.now() + 1000, error)).toBe('settled');
        expect(await claim()).toBeNull();
        subject.advance(999);
        expect(await claim()).toBeNull();
        subject.advance(1);
        const again = await claim();
        expect(again?.delivery).toEqual({
          ...deliveryFixture(1),
          attempts: 1,
          notBefore: subject.now(),
          lastError: error,
        });
      });
    });

    describe('when several chats have deliveries', () => {
      it('hands out one head per chat, the oldest head first, and keeps channels apart', async () => {
        const chatB = 'telegram:tg:person:7';
        await subject.store.add(deliveryFixture(1));
        await subject.store.add(deliveryFixture(2, { chat: chatB }));
        await subject.store.add(deliveryFixture(3));
        await subject.store.add(deliveryFixture(4, { channel: 'sl' }));
        expect(idOf(await claim())).toBe(deliveryFixture(1).id);
        expect(idOf(await claim())).toBe(deliveryFixture(2).id);
        expect(await claim()).toBeNull();
        expect(idOf(await claim('sl'))).toBe(deliveryFixture(4).id);
        expect(await subject.store.pending()).toEqual({ [CHANNEL]: 3, sl: 1 });
        expect((await subject.store.list(CHANNEL)).map((delivery) => delivery.id)).toEqual(
          [1, 2, 3].map((index) => deliveryFixture(index).id),
        );
      });

      it('never hands one delivery to two concurrent claims', async () => {
        for (let index = 0; index < 10; index++) {
          await subject.store.add(deliveryFixture(index, { chat: `chat-${index % 5}` }));
        }
        const claims = await Promise.all(Array.from({ length: 10 }, () => claim()));
        const ids = claims.map(idOf).filter((id) => id !== null);
        expect(ids).toHaveLength(5);
        expect(new Set(ids).size).toBe(5);
      });
    });

    describe('when a claim says whether more is due (moreDue)', () => {
      it('says so while another chat has a due head unclaimed, and not for a head that waits', async () => {
        const chatB = 'telegram:tg:person:7';
        await subject.store.add(deliveryFixture(1));
        await subject.store.add(deliveryFixture(2, { chat: chatB }));
        await subject.store.add(deliveryFixture(3));
        await subject.store.add(deliveryFixture(4, { chat: 'chat-c', notBefore: subject.now() + 1000 }));
        expect((await claim())?.moreDue).toBe(true);
        // Left: chat A's second, behind its claimed head, and chat C's, not due yet.
        const last = await claim();
        expect([idOf(last), last?.moreDue]).toEqual([deliveryFixture(2).id, false]);
        expect(await claim()).toBeNull();
      });
    });

    describe('when an add claims for its caller (addAndClaim)', () => {
      it('claims the delivery it adds when its chat is empty and it is due, once', async () => {
        const delivery = deliveryFixture(1);
        const { result, claim: claimed } = await subject.store.addAndClaim(delivery, subject.now());
        expect(result).toBe('added');
        expect(claimed).toEqual({ delivery, token: expect.any(String), moreDue: false });
        expect(await claim()).toBeNull();
        expect(await subject.store.pending()).toEqual({ [CHANNEL]: 1 });
        expect(await subject.store.delivered(claimed as DeliveryClaim)).toBe('settled');
        expect(await subject.store.pending()).toEqual({});
      });

      it("leaves a delivery behind its chat's head to the head's removal, which claims it next", async () => {
        await subject.store.add(deliveryFixture(1));
        const head = (await claim()) as DeliveryClaim;
        expect(await subject.store.addAndClaim(deliveryFixture(2), subject.now())).toEqual({
          result: 'added',
          claim: null,
        });
        expect(await claim()).toBeNull();
        const { next } = await subject.store.endAndClaim(head, subject.now());
        expect(idOf(next)).toBe(deliveryFixture(2).id);
      });

      it("claims an older chat's due head instead, and says its own is due", async () => {
        await subject.store.add(deliveryFixture(1));
        const { claim: claimed } = await subject.store.addAndClaim(
          deliveryFixture(2, { chat: 'telegram:tg:person:7' }),
          subject.now(),
        );
        expect([idOf(claimed), claimed?.moreDue]).toEqual([deliveryFixture(1).id, true]);
        expect(idOf(await claim())).toBe(deliveryFixture(2).id);
      });

      it('claims nothing for a delivery not due yet, nor for an id stored already', async () => {
        const later = deliveryFixture(1, { notBefore: subject.now() + 1000 });
        expect((await subject.store.addAndClaim(later, subject.now())).claim).toBeNull();
        expect(await subject.store.addAndClaim(later, subject.now() + 1000)).toEqual({
          result: 'duplicate',
          claim: null,
        });
        subject.advance(1000);
        expect(idOf(await claim())).toBe(later.id);
      });

      it('tells the onDue listeners nothing about a delivery it claimed', async () => {
        const woken: string[] = [];
        const stop = subject.store.onDue((channel) => woken.push(channel));
        await subject.store.addAndClaim(deliveryFixture(1), subject.now());
        stop();
        expect(woken).toEqual([]);
      });
    });

    describe('when a removal claims next (endAndClaim)', () => {
      it("removes the delivery and claims its chat's next one in the same call", async () => {
        const remembered = deliveryFixture(1, { id: 'replay:01JAUDIT', rememberForMs: 60_000 });
        await subject.store.add(remembered);
        await subject.store.add(deliveryFixture(2));
        const first = (await claim()) as DeliveryClaim;
        const { settlement, next } = await subject.store.endAndClaim(first, subject.now());
        expect(settlement).toBe('settled');
        expect(next).toEqual({ delivery: deliveryFixture(2), token: expect.any(String), moreDue: false });
        expect(await subject.store.add(remembered)).toBe('duplicate');
        expect(await subject.store.endAndClaim(next as DeliveryClaim, subject.now())).toEqual({
          settlement: 'settled',
          next: null,
        });
        expect(await subject.store.pending()).toEqual({});
      });

      it('answers lost for a claim settled already, and still claims what is due', async () => {
        await subject.store.add(deliveryFixture(1));
        await subject.store.add(deliveryFixture(2, { chat: 'telegram:tg:person:7' }));
        const first = (await claim()) as DeliveryClaim;
        await subject.store.delivered(first);
        const { settlement, next } = await subject.store.endAndClaim(first, subject.now());
        expect([settlement, idOf(next)]).toEqual(['lost', deliveryFixture(2).id]);
      });
    });

    describe('when two consumers share the store', () => {
      it('never hands them the same delivery, and frees a chat for both once settled', async (context) => {
        const peer = await subject.peer();
        if (peer === null) return context.skip('not shared by replicas');
        for (let index = 0; index < 10; index++) {
          await subject.store.add(deliveryFixture(index, { chat: `chat-${index % 5}` }));
        }
        const claims = await Promise.all(
          Array.from({ length: 10 }, (_, index) =>
            (index % 2 === 0 ? subject.store : peer).claim(CHANNEL, subject.now()),
          ),
        );
        const held = claims.filter((claimed) => claimed !== null);
        expect(new Set(held.map(idOf)).size).toBe(5);
        expect(held).toHaveLength(5);
        const first = held.find((claimed) => claimed.delivery.chat === 'chat-0') as DeliveryClaim;
        expect(await peer.delivered(first)).toBe('settled');
        expect(idOf(await subject.store.claim(CHANNEL, subject.now()))).toBe(deliveryFixture(5).id);
      });
    });

    describe('when a delivery asked for its id to be remembered (rememberForMs)', () => {
      it.each(['delivered', 'failed'] as const)(
        'answers duplicate to the same id added again after it was %s, and stores nothing',
        async (ending) => {
          const remembered = deliveryFixture(1, { id: 'replay:01JAUDIT', rememberForMs: 60_000 });
          expect(await subject.store.add(remembered)).toBe('added');
          const claimed = (await claim()) as DeliveryClaim;
          expect(claimed.delivery).toEqual(remembered);
          await subject.store[ending](claimed);
          expect(await subject.store.add(remembered)).toBe('duplicate');
          expect(await subject.store.pending()).toEqual({});
          expect(await claim()).toBeNull();
        },
      );

      it('still remembers it after a reopen', async (context) => {
        const remembered = deliveryFixture(1, { id: 'replay:01JAUDIT', rememberForMs: 60_000 });
        await subject.store.add(remembered);
        await subject.store.delivered((await claim()) as DeliveryClaim);
        const reopened = await subject.reopen();
        if (reopened === null) return context.skip('not durable');
        expect(await reopened.add(remembered)).toBe('duplicate');
      });

      it('forgets it once rememberForMs has passed by the clock it was given (an outbox of one process)', async (context) => {
        // A shared outbox remembers by its server's clock (Redis key expiry).
        if (subject.store.shared) return context.skip('remembers by its server clock');
        const remembered = deliveryFixture(1, { id: 'replay:01JAUDIT', rememberForMs: 60_000 });
        await subject.store.add(remembered);
        await subject.store.delivered((await claim()) as DeliveryClaim);
        subject.advance(59_999);
        expect(await subject.store.add(remembered)).toBe('duplicate');
        subject.advance(1);
        expect(await subject.store.add(remembered)).toBe('added');
      });

      it('forgets an ended id without rememberForMs: adding it again stores it again', async () => {
        await subject.store.add(deliveryFixture(1));
        await subject.store.delivered((await claim()) as DeliveryClaim);
        expect(await subject.store.add(deliveryFixture(1))).toBe('added');
        expect(idOf(await claim())).toBe(deliveryFixture(1).id);
      });
    });

    describe('when a claim was settled already', () => {
      it('answers lost to a second settlement with its token and changes nothing', async () => {
        await subject.store.add(deliveryFixture(1));
        await subject.store.add(deliveryFixture(2));
        const first = (await claim()) as DeliveryClaim;
        await subject.store.delivered(first);
        expect(await subject.store.delivered(first)).toBe('lost');
        expect(await subject.store.failed(first)).toBe('lost');
        expect(await subject.store.retry(first, 0, { code: 'X', message: 'x' })).toBe('lost');
        expect((await subject.store.list(CHANNEL)).map((delivery) => delivery.id)).toEqual([
          deliveryFixture(2).id,
        ]);
      });
    });

    describe('when the store is reopened', () => {
      it('keeps deliveries, their order, backoff and attempts, and frees claims of the last run', async (context) => {
        await subject.store.add(deliveryFixture(1));
        await subject.store.add(deliveryFixture(2));
        await subject.store.add(deliveryFixture(3, { chat: 'telegram:tg:person:7' }));
        const error = { code: 'SB_CHANNEL_SEND_TIMEOUT', message: 'slow' };
        await subject.store.retry((await claim()) as DeliveryClaim, subject.now() + 500, error);
        // Claimed and never settled: the process died sending it.
        expect(idOf(await claim())).toBe(deliveryFixture(3).id);
        const reopened = await subject.reopen();
        if (reopened === null) return context.skip('not durable');
        expect(reopened.durable).toBe(true);
        expect((await reopened.list(CHANNEL)).map((delivery) => delivery.attempts)).toEqual([1, 0, 0]);
        expect(idOf(await reopened.claim(CHANNEL, subject.now()))).toBe(deliveryFixture(3).id);
        expect(await reopened.claim(CHANNEL, subject.now())).toBeNull();
        subject.advance(500);
        const head = await reopened.claim(CHANNEL, subject.now());
        expect(head?.delivery.lastError).toEqual(error);
        await reopened.delivered(head as DeliveryClaim);
        expect(idOf(await reopened.claim(CHANNEL, subject.now()))).toBe(deliveryFixture(2).id);
      });
    });
  });
}
