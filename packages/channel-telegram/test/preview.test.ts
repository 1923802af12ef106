import { silentLogger } from '@switchboard/core';
import { inboundMessage } from '@switchboard/testkit/inbound-message';
import { type FakeTelegram, startFakeTelegram } from '@switchboard/testkit/telegram';
import Fastify from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTelegramChannel } from '../src/index.js';
import { TelegramChannelSchema } from '../src/options.js';

describe('createTelegramChannel previews (against the fake Bot API)', () => {
  let fake: FakeTelegram;
  beforeAll(async () => {
    fake = await startFakeTelegram();
  });
  afterAll(() => fake.close());

  let nextChat = 700_000_000;
  function setUp() {
    const chatId = nextChat++;
    const origin = inboundMessage({
      chat: { type: 'person', id: String(chatId) },
      platform_message_id: `${chatId}:7`,
    });
    const channel = createTelegramChannel({
      config: TelegramChannelSchema.parse({
        id: 'tg',
        type: 'telegram',
        token: fake.token,
        api_root: fake.url,
        outbound: {
          concurrency: 8,
          rate: { enabled: false, per_bot: null, per_chat: null, per_group: null },
        },
      }),
      server: Fastify(),
      logger: silentLogger,
    });
    const signal = new AbortController().signal;
    const sentTo = () => fake.sentMessages().filter((sent) => sent.body.chat_id === chatId);
    const editsIn = () => fake.edits().filter((edit) => edit.chatId === String(chatId));
    return { chatId, origin, channel, signal, sentTo, editsIn };
  }

  describe('when an answer is previewed, then sent with the preview as draft', () => {
    it('posts once, edits that message, and edits it into the final text', async () => {
      const { chatId, origin, channel, signal, sentTo, editsIn } = setUp();
      const preview = channel.preview;
      if (preview === undefined) throw new Error('the Telegram channel shows previews');

      const draft = await preview(origin, 'Hel', undefined, signal);
      expect(await preview(origin, 'Hello', draft, signal)).toBe(draft);
      await channel.send(origin, [{ text: 'Hello, world' }], signal, { draft });

      expect(sentTo()).toHaveLength(1);
      expect(sentTo()[0]?.body).toMatchObject({ text: 'Hel', reply_parameters: { message_id: 7 } });
      expect(editsIn().map((edit) => edit.text)).toEqual(['Hello', 'Hello, world']);
      expect(fake.textOf(chatId, Number(draft))).toBe('Hello, world');
    });

    it('takes an edit to the same text as done (Telegram answers "message is not modified")', async () => {
      const { chatId, origin, channel, signal } = setUp();
      const draft = await channel.preview?.(origin, 'Done', undefined, signal);
      await channel.send(origin, [{ text: 'Done' }], signal, { draft });
      expect(fake.textOf(chatId, Number(draft))).toBe('Done');
    });
  });

  describe('when the answer is longer than one message', () => {
    it('previews its first 4096 characters and posts the rest after the final edit', async () => {
      const { chatId, origin, channel, signal, sentTo } = setUp();
      const long = 'a'.repeat(5000);
      const draft = await channel.preview?.(origin, long, undefined, signal);
      expect(fake.textOf(chatId, Number(draft))).toBe('a'.repeat(4096));

      await channel.send(origin, [{ text: long }, { text: 'PS' }], signal, { draft });

      expect(sentTo().map((sent) => sent.body.text)).toEqual(['a'.repeat(4096), 'a'.repeat(904), 'PS']);
    });
  });
});
