import { silentLogger } from '@switchboard/core';
import { type FakeDiscord, startFakeDiscord } from '@switchboard/testkit/discord';
import { inboundMessage } from '@switchboard/testkit/inbound-message';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createDiscordChannel } from '../../src/index.js';
import { DiscordChannelSchema } from '../../src/options.js';

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
      config: DiscordChannelSchema.parse({
        id: 'dc',
        type: 'discord',
        token: fake.token,
        api_url: fake.url,
        outbound: {
          concurrency: 8,
          rate: { enabled: false, per_bot: null, per_chat: null, per_group: null },
        },
      }),
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
