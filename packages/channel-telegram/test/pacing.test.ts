import { type ChannelAdapter, type OutboundObserver, silentLogger } from '@switchboard/core';
import { inboundMessage } from '@switchboard/testkit/inbound-message';
import { type FakeTelegram, startFakeTelegram } from '@switchboard/testkit/telegram';
import Fastify from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { TELEGRAM_RATE, TelegramChannelSchema } from '../src/options.js';
import { createTelegramChannel } from '../src/index.js';

/** What the channel reported: each pacing wait and each 429. */
function recordingObserver() {
  const waits: number[] = [];
  const rateLimited: number[] = [];
  const observer: OutboundObserver = {
    paced: (_, waitedMs) => waits.push(waitedMs),
    rateLimited: (_, retryAfterMs) => rateLimited.push(retryAfterMs),
  };
  return { observer, waits, rateLimited };
}

const origin = (chatId: number) =>
  inboundMessage({ chat: { type: 'person', id: String(chatId) }, platform_message_id: `${chatId}:7` });

/** The chats' ids: 60 private chats. */
const chatIds = (count: number) => Array.from({ length: count }, (_, index) => 5_000_000 + index);

/** Sends `perChat` replies to every chat, one after the other per chat (as a session does), all chats at once. */
async function replyToAll(channel: ChannelAdapter, chats: number[], perChat: number) {
  const signal = new AbortController().signal;
  return Promise.allSettled(
    chats.map(async (chatId) => {
      for (let index = 0; index < perChat; index += 1) {
        await channel.send(origin(chatId), [{ text: `reply ${index}` }], signal);
      }
    }),
  );
}

describe('createTelegramChannel pacing (against a fake enforcing 30/s per bot and 1/s per chat)', () => {
  let fake: FakeTelegram;

  beforeEach(async () => {
    fake = await startFakeTelegram({
      rateLimits: { perBot: { limit: 30, perMs: 1000 }, perChat: { limit: 1, perMs: 1000 } },
    });
  });
  afterEach(() => fake.close());

  /** `rate`: `outbound.rate` as written in the YAML. */
  function channel(rate: typeof TELEGRAM_RATE, observer: OutboundObserver) {
    return createTelegramChannel({
      config: TelegramChannelSchema.parse({
        id: 'tg',
        type: 'telegram',
        token: fake.token,
        api_root: fake.url,
        outbound: { concurrency: 8, rate },
      }),
      server: Fastify(),
      logger: silentLogger,
      observer,
    });
  }

  describe("when pacing runs with Telegram's limits", () => {
    it('delivers 300 replies to 60 chats, in order per chat, and the fake counts no violation', async () => {
      const { observer, waits, rateLimited } = recordingObserver();
      const chats = chatIds(60);
      const results = await replyToAll(channel(TELEGRAM_RATE, observer), chats, 5);

      expect(results.filter((result) => result.status === 'rejected')).toEqual([]);
      for (const chatId of chats) {
        expect(fake.deliveredTo(chatId)).toEqual(['reply 0', 'reply 1', 'reply 2', 'reply 3', 'reply 4']);
      }
      expect(fake.rateLimitViolations()).toBe(0);
      expect(rateLimited).toEqual([]);
      expect(waits).toHaveLength(300);
      expect(waits.filter((ms) => ms > 0).length).toBeGreaterThan(0);
    });
  });

  describe('when an answer is streamed into a chat (a preview, its edits, the final send)', () => {
    it('paces the edits with the sends: every call waits its turn and the fake counts no violation', async () => {
      const { observer, waits, rateLimited } = recordingObserver();
      const tg = channel(TELEGRAM_RATE, observer);
      const signal = new AbortController().signal;
      const chat = origin(chatIds(1)[0] ?? 0);
      const draft = await tg.preview?.(chat, 'He', undefined, signal);
      if (draft === undefined) throw new Error('the Telegram channel shows previews');
      await tg.preview?.(chat, 'Hell', draft, signal);
      await tg.preview?.(chat, 'Hello', draft, signal);
      await tg.send(chat, [{ text: 'Hello, world' }, { text: 'PS' }], signal, { draft });

      expect(fake.edits().map((edit) => edit.text)).toEqual(['Hell', 'Hello', 'Hello, world']);
      expect(fake.rateLimitViolations()).toBe(0);
      expect(rateLimited).toEqual([]);
      // The post, three edits and the second message: five calls into one chat, paced one by one.
      expect(waits).toHaveLength(5);
      expect(waits.filter((ms) => ms > 0).length).toBeGreaterThan(0);
    });
  });

  describe('when pacing is switched off', () => {
    it("meets the fake's 429s and reports each one; auto-retry still waits them out", async () => {
      const { observer, waits, rateLimited } = recordingObserver();
      const chats = chatIds(20);
      const results = await replyToAll(channel({ ...TELEGRAM_RATE, enabled: false }, observer), chats, 3);

      expect(fake.rateLimitViolations()).toBeGreaterThan(0);
      expect(rateLimited).toHaveLength(fake.rateLimitViolations());
      expect(rateLimited.every((ms) => ms >= 1000)).toBe(true);
      expect(waits.every((ms) => ms === 0)).toBe(true);
      expect(results.filter((result) => result.status === 'rejected')).toEqual([]);
      for (const chatId of chats) {
        expect(fake.deliveredTo(chatId)).toEqual(['reply 0', 'reply 1', 'reply 2']);
      }
    });
  });
});
