import { describe, expect, it } from 'vitest';
import type { HandoffStore, InboundMessage } from '@switchboard/core';
import { type StoreFactory, useStoreUnderTest } from './store-harness.js';

const SESSION = 'telegram:tg:person:42';
const OTHER = 'telegram:tg:person:43';
const MAX = 100;

function userMessage(id: string, text: string, chat = '42'): InboundMessage {
  return {
    id,
    platform: 'telegram',
    channel: 'tg',
    chat: { type: 'person', id: chat },
    sender: { id: chat, name: 'Ann', is_bot: false },
    elements: [{ type: 'text', text }],
    text,
    mentions_bot: false,
    platform_message_id: `p-${id}`,
    received_at: 1,
    raw: { update_id: 7, secret: 'platform event' },
  };
}

const start = (at: number) => ({ reason: 'asked for a human', by: 'rule:human', at });

/** The behaviour every `HandoffStore` must show (ports/handoff-store.ts); run it once per implementation. */
export function handoffStoreContract(name: string, factory: StoreFactory<HandoffStore>): void {
  describe(`HandoffStore contract: ${name}`, () => {
    const subject = useStoreUnderTest(factory);

    describe('when a session is not in handoff', () => {
      it('has no handoff, holds nothing and takes no reply', async () => {
        const { store } = subject;
        expect(await store.get(SESSION)).toBeNull();
        expect(await store.hold(SESSION, [userMessage('m1', 'hi')], { at: 1, maxEntries: MAX })).toBe(
          'not_in_handoff',
        );
        expect(
          await store.reply(SESSION, { id: 'r1', operator: 'ann', text: 'x', at: 1 }, { maxEntries: MAX }),
        ).toBe('not_in_handoff');
        expect(await store.transcript(SESSION, 0, 10)).toEqual([]);
        expect(await store.end(SESSION)).toBeNull();
        expect(await store.count()).toBe(0);
      });
    });

    describe('when a handoff begins', () => {
      it('is in force with what began it, and a second begin keeps the first', async () => {
        const { store } = subject;
        const origin = userMessage('m0', 'human please');
        const first = await store.begin(SESSION, { ...start(1000), pipeline: 'bot', origin });
        expect(first.created).toBe(true);
        expect(first.handoff).toMatchObject({
          session: SESSION,
          reason: 'asked for a human',
          by: 'rule:human',
          startedAt: 1000,
          activeAt: 1000,
          pipeline: 'bot',
          held: 0,
          unread: 0,
          waitingSince: null,
          lastSeq: 0,
        });
        expect(first.handoff.origin?.id).toBe('m0');
        expect(first.handoff.origin?.raw).toBeUndefined();

        const second = await store.begin(SESSION, { reason: 'again', by: 'operator:bob', at: 2000 });
        expect(second.created).toBe(false);
        expect(second.handoff).toMatchObject({ reason: 'asked for a human', startedAt: 1000 });
        expect(await store.get(SESSION)).toEqual(first.handoff);
        expect(await store.count()).toBe(1);
      });

      it('keeps the tenant it began with through holds, replies and the end, and `default` when it named none', async () => {
        const { store } = subject;
        await store.begin(SESSION, { ...start(1000), tenant: 'acme' });
        await store.begin(OTHER, start(1000));
        expect((await store.get(SESSION))?.tenant).toBe('acme');
        expect((await store.get(OTHER))?.tenant).toBe('default');
        await store.hold(SESSION, [userMessage('m1', 'hi')], { at: 1100, maxEntries: MAX });
        await store.reply(
          SESSION,
          { id: 'r1', operator: 'ann', text: 'hello', at: 1200 },
          { maxEntries: MAX },
        );
        expect((await store.list(10)).map((handoff) => [handoff.session, handoff.tenant])).toEqual([
          [SESSION, 'acme'],
          [OTHER, 'default'],
        ]);
        expect((await store.end(SESSION))?.handoff.tenant).toBe('acme');
      });
    });

    describe('when messages are held', () => {
      it('keeps them in order without their platform event, each id once', async () => {
        const { store } = subject;
        await store.begin(SESSION, start(1000));
        const options = { at: 1100, pipeline: 'bot', maxEntries: MAX };
        expect(await store.hold(SESSION, [userMessage('m1', 'one'), userMessage('m2', 'two')], options)).toBe(
          'held',
        );
        // A turn claimed again after a crash holds the same messages again.
        expect(await store.hold(SESSION, [userMessage('m2', 'two')], { ...options, at: 1200 })).toBe('held');
        expect(await store.hold(SESSION, [userMessage('m3', 'three')], { ...options, at: 1300 })).toBe(
          'held',
        );

        const transcript = await store.transcript(SESSION, 0, 10);
        expect(transcript.map((entry) => [entry.seq, entry.from, entry.at])).toEqual([
          [1, 'user', 1100],
          [2, 'user', 1100],
          [3, 'user', 1300],
        ]);
        const texts = transcript.map((entry) => (entry.from === 'user' ? entry.message.text : entry.text));
        expect(texts).toEqual(['one', 'two', 'three']);
        expect(transcript.every((entry) => entry.from === 'user' && entry.message.raw === undefined)).toBe(
          true,
        );

        const handoff = await store.get(SESSION);
        expect(handoff).toMatchObject({
          held: 3,
          unread: 3,
          waitingSince: 1100,
          lastSeq: 3,
          pipeline: 'bot',
        });
        expect(handoff?.origin?.id).toBe('m3');
      });

      it('holds an id repeated within one call once', async () => {
        const { store } = subject;
        await store.begin(SESSION, start(1000));
        const repeated = [userMessage('m1', 'one'), userMessage('m1', 'one')];
        expect(await store.hold(SESSION, repeated, { at: 1100, maxEntries: MAX })).toBe('held');
        expect((await store.transcript(SESSION, 0, 10)).map((entry) => entry.seq)).toEqual([1]);
        expect(await store.get(SESSION)).toMatchObject({ held: 1, unread: 1, lastSeq: 1 });
      });

      it('reads the transcript after a seq, at most limit entries', async () => {
        const { store } = subject;
        await store.begin(SESSION, start(1000));
        for (let index = 1; index <= 5; index += 1)
          await store.hold(SESSION, [userMessage(`m${index}`, `t${index}`)], {
            at: 1000 + index,
            maxEntries: MAX,
          });
        const page = await store.transcript(SESSION, 2, 2);
        expect(page.map((entry) => entry.seq)).toEqual([3, 4]);
        expect(await store.transcript(SESSION, 5, 10)).toEqual([]);
      });

      it('refuses what would pass maxEntries, writing none of it', async () => {
        const { store } = subject;
        await store.begin(SESSION, start(1000));
        await store.hold(SESSION, [userMessage('m1', 'a'), userMessage('m2', 'b')], {
          at: 1001,
          maxEntries: 3,
        });
        expect(
          await store.hold(SESSION, [userMessage('m3', 'c'), userMessage('m4', 'd')], {
            at: 1002,
            maxEntries: 3,
          }),
        ).toBe('full');
        expect(await store.get(SESSION)).toMatchObject({ held: 2, lastSeq: 2 });
        expect(await store.hold(SESSION, [userMessage('m3', 'c')], { at: 1003, maxEntries: 3 })).toBe('held');
        expect(await store.hold(SESSION, [userMessage('m4', 'd')], { at: 1003, maxEntries: 3 })).toBe('full');
      });

      it('keeps room for maxEntries operator replies however many messages were held', async () => {
        const { store } = subject;
        await store.begin(SESSION, start(1000));
        await store.hold(SESSION, [userMessage('m1', 'a'), userMessage('m2', 'b')], {
          at: 1001,
          maxEntries: 2,
        });
        const reply = (id: string) =>
          store.reply(SESSION, { id, operator: 'ann', text: id, at: 1002 }, { maxEntries: 2 });
        expect(await reply('r1')).toMatchObject({ before: { held: 2 } });
        expect(await reply('r2')).toMatchObject({ before: { held: 2 } });
        expect(await reply('r3')).toBe('full');
        expect(await store.get(SESSION)).toMatchObject({ held: 2, lastSeq: 4 });
      });
    });

    describe('when an operator replies', () => {
      it('appends the reply, clears unread and counts idleness from it', async () => {
        const { store } = subject;
        await store.begin(SESSION, start(1000));
        await store.hold(SESSION, [userMessage('m1', 'help')], { at: 1500, maxEntries: MAX });
        const reply = { id: 'r1', operator: 'ann', text: 'I am here', at: 2000 };
        const answered = await store.reply(SESSION, reply, { maxEntries: MAX });
        expect(answered).toMatchObject({ before: { unread: 1, waitingSince: 1500, activeAt: 1000 } });
        expect(await store.get(SESSION)).toMatchObject({
          unread: 0,
          waitingSince: null,
          activeAt: 2000,
          held: 1,
        });
        // The same reply sent again (a retried request) is written once.
        await store.reply(SESSION, reply, { maxEntries: MAX });
        const transcript = await store.transcript(SESSION, 0, 10);
        expect(transcript).toEqual([
          expect.objectContaining({ seq: 1, from: 'user' }),
          { seq: 2, at: 2000, from: 'operator', id: 'r1', operator: 'ann', text: 'I am here' },
        ]);

        await store.hold(SESSION, [userMessage('m2', 'thanks')], { at: 2500, maxEntries: MAX });
        expect(await store.get(SESSION)).toMatchObject({ unread: 1, waitingSince: 2500 });
      });

      it('keeps the files a reply named, and a reply of files only', async () => {
        const { store } = subject;
        await store.begin(SESSION, start(1000));
        const attachments = [
          { type: 'image' as const, name: 'form.png', mime_type: 'image/png' },
          { type: 'file' as const, url: 'https://files.example.com/terms.pdf' },
        ];
        await store.reply(
          SESSION,
          { id: 'r1', operator: 'ann', text: '', attachments, at: 2000 },
          { maxEntries: MAX },
        );
        expect(await store.transcript(SESSION, 0, 10)).toEqual([
          { seq: 1, at: 2000, from: 'operator', id: 'r1', operator: 'ann', text: '', attachments },
        ]);
      });
    });

    describe('when sessions wait in the inbox', () => {
      it('lists the longest waiting first, then those waiting for nothing by start', async () => {
        const { store } = subject;
        const third = 'telegram:tg:person:44';
        await store.begin(SESSION, start(1000));
        await store.begin(OTHER, start(900));
        await store.begin(third, start(800));
        await store.hold(SESSION, [userMessage('a', 'x')], { at: 1200, maxEntries: MAX });
        await store.hold(OTHER, [userMessage('b', 'y', '43')], { at: 1100, maxEntries: MAX });
        expect((await store.list(10)).map((handoff) => handoff.session)).toEqual([OTHER, SESSION, third]);
        expect((await store.list(1)).map((handoff) => handoff.session)).toEqual([OTHER]);
      });

      it('lists sessions waiting since the same time by when their handoff began', async () => {
        const { store } = subject;
        await store.begin(SESSION, start(2000));
        await store.begin(OTHER, start(1000));
        await store.hold(SESSION, [userMessage('a', 'x')], { at: 3000, maxEntries: MAX });
        await store.hold(OTHER, [userMessage('b', 'y', '43')], { at: 3000, maxEntries: MAX });
        expect((await store.list(10)).map((handoff) => handoff.session)).toEqual([OTHER, SESSION]);
      });

      it('finds the handoffs idle since before a time', async () => {
        const { store } = subject;
        await store.begin(SESSION, start(1000));
        await store.begin(OTHER, start(1000));
        await store.reply(OTHER, { id: 'r', operator: 'ann', text: 'hi', at: 5000 }, { maxEntries: MAX });
        // Held messages are no operator activity.
        await store.hold(SESSION, [userMessage('a', 'x')], { at: 6000, maxEntries: MAX });
        expect((await store.idle(4000, 10)).map((handoff) => handoff.session)).toEqual([SESSION]);
        expect((await store.idle(6000, 10)).map((handoff) => handoff.session).sort()).toEqual(
          [SESSION, OTHER].sort(),
        );
        expect(await store.idle(1000, 10)).toEqual([]);
      });
    });

    describe('when a handoff ends', () => {
      it('returns it with its whole transcript once, and the session is free', async () => {
        const { store } = subject;
        await store.begin(SESSION, start(1000));
        await store.hold(SESSION, [userMessage('m1', 'one')], { at: 1100, maxEntries: MAX });
        await store.reply(SESSION, { id: 'r1', operator: 'ann', text: 'ok', at: 1200 }, { maxEntries: MAX });
        const ended = await store.end(SESSION);
        expect(ended?.handoff).toMatchObject({ session: SESSION, held: 1, lastSeq: 2 });
        expect(ended?.transcript.map((entry) => entry.seq)).toEqual([1, 2]);
        expect(await store.end(SESSION)).toBeNull();
        expect(await store.get(SESSION)).toBeNull();
        expect(await store.hold(SESSION, [userMessage('m2', 'two')], { at: 1300, maxEntries: MAX })).toBe(
          'not_in_handoff',
        );
        expect(await store.count()).toBe(0);
      });

      it('with startedAt, ends only the handoff that began then', async () => {
        const { store } = subject;
        await store.begin(SESSION, start(1000));
        expect(await store.end(SESSION, { startedAt: 999 })).toBeNull();
        expect(await store.get(SESSION)).not.toBeNull();
        expect((await store.end(SESSION, { startedAt: 1000 }))?.handoff.startedAt).toBe(1000);
      });

      it('with activeAt, ends only a handoff no operator acted on since', async () => {
        const { store } = subject;
        await store.begin(SESSION, start(1000));
        await store.reply(SESSION, { id: 'r', operator: 'ann', text: 'hi', at: 1500 }, { maxEntries: MAX });
        expect(await store.end(SESSION, { startedAt: 1000, activeAt: 1000 })).toBeNull();
        expect((await store.end(SESSION, { startedAt: 1000, activeAt: 1500 }))?.handoff.activeAt).toBe(1500);
      });

      it('begins afresh afterwards, numbering from 1 again', async () => {
        const { store } = subject;
        await store.begin(SESSION, start(1000));
        await store.hold(SESSION, [userMessage('m1', 'one')], { at: 1100, maxEntries: MAX });
        await store.end(SESSION);
        await store.begin(SESSION, start(2000));
        // The id held in the handoff that ended may be held again in the new one.
        await store.hold(SESSION, [userMessage('m1', 'one')], { at: 2100, maxEntries: MAX });
        expect((await store.transcript(SESSION, 0, 10)).map((entry) => entry.seq)).toEqual([1]);
        expect(await store.get(SESSION)).toMatchObject({ startedAt: 2000, held: 1 });
      });
    });

    describe('when the store is reopened', () => {
      it('keeps handoffs and transcripts (durable stores)', async () => {
        await subject.store.begin(SESSION, start(1000));
        await subject.store.hold(SESSION, [userMessage('m1', 'one')], { at: 1100, maxEntries: MAX });
        const reopened = await subject.reopen();
        if (reopened === null) return;
        expect(await reopened.get(SESSION)).toMatchObject({ held: 1, lastSeq: 1 });
        expect(await reopened.hold(SESSION, [userMessage('m1', 'one')], { at: 1200, maxEntries: MAX })).toBe(
          'held',
        );
        expect((await reopened.transcript(SESSION, 0, 10)).length).toBe(1);
      });
    });

    describe('when replicas share the store', () => {
      it('holds on one what began on another, and only one ends it', async () => {
        const peer = await subject.peer();
        if (peer === null) return;
        await subject.store.begin(SESSION, start(1000));
        expect(await peer.hold(SESSION, [userMessage('m1', 'one')], { at: 1100, maxEntries: MAX })).toBe(
          'held',
        );
        const ends = await Promise.all([subject.store.end(SESSION), peer.end(SESSION)]);
        expect(ends.filter((ended) => ended !== null)).toHaveLength(1);
      });
    });
  });
}
