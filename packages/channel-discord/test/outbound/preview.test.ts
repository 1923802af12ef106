import { silentLogger } from '@switchboard/core';
import { type FakeDiscord, startFakeDiscord } from '@switchboard/testkit/discord';
import { inboundMessage } from '@switchboard/testkit/inbound-message';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createDiscordChannel } from '../../src/index.js';

const CHANNEL = '1240000000000000077';

const origin = inboundMessage({
  platform: 'discord',
  channel: 'dc',
  chat: { type: 'group', id: CHANNEL },
  platform_message_id: '1250000000000000001',
});

// Sends need no gateway session: the REST client works on its own.
describe('discord channel previews (against the fake Discord)', () => {
  let fake: FakeDiscord;
  beforeEach(async () => {
    fake = await startFakeDiscord();
  });
  afterEach(() => fake.close());

  function channel() {
    return createDiscordChannel({
      config: {
        id: 'dc',
        type: 'discord',
        token: fake.token,
        apiUrl: fake.url,
        policy: { admission: { require_mention: true, prefixes: [] }, sessionScope: 'chat' },
        outbound: {
          sendTimeoutMs: 30_000,
          editIntervalMs: 1_000,
          concurrency: 8,
          maxAgeMs: 3_600_000,
          retry: { baseDelayMs: 1_000, maxDelayMs: 60_000 },
          rate: { enabled: false, perBot: null, perChat: null, perGroup: null },
        },
      },
      logger: silentLogger,
    });
  }

  describe('when an answer is previewed, then sent with the preview as draft', () => {
    it('posts once as a reply, edits that message, and edits it into the final text', async () => {
      const dc = channel();
      const signal = new AbortController().signal;
      const draft = await dc.preview?.(origin, 'Hel', undefined, signal);
      if (draft === undefined) throw new Error('the Discord channel shows previews');
      expect(await dc.preview?.(origin, 'Hello', draft, signal)).toBe(draft);
      await dc.send(origin, [{ text: 'Hello, world' }, { text: 'PS' }], signal, { draft });

      expect(fake.sentMessages().map((sent) => sent.body)).toEqual([
        expect.objectContaining({
          content: 'Hel',
          message_reference: expect.objectContaining({ message_id: '1250000000000000001' }),
        }),
        expect.objectContaining({ content: 'PS' }),
      ]);
      expect(fake.edits().map((edit) => [edit.messageId, edit.content])).toEqual([
        [draft, 'Hello'],
        [draft, 'Hello, world'],
      ]);
      expect(fake.contentOf(CHANNEL, draft)).toBe('Hello, world');
    });
  });
});
