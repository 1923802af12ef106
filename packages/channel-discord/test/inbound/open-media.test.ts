import { type ChannelAdapter, isSwitchboardError, silentLogger } from '@switchboard/core';
import { recordingIngress } from '@switchboard/contracts';
import { type FakeDiscord, startFakeDiscord } from '@switchboard/testkit/discord';
import { eventually } from '@switchboard/testkit/eventually';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DiscordChannelSchema } from '../../src/options.js';
import { createDiscordChannel } from '../../src/index.js';

const DM = '1240000000000000009';
const alice = { id: '234567890123456789', username: 'alice' };

async function bytesOf(body: AsyncIterable<Buffer>): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of body) chunks.push(chunk);
  return Buffer.concat(chunks);
}

describe('createDiscordChannel openMedia (against the fake Discord)', () => {
  let fake: FakeDiscord;
  let dc: ChannelAdapter;
  const { ingress, accepted } = recordingIngress(async () => ({ status: 'duplicate' }));

  beforeAll(async () => {
    fake = await startFakeDiscord();
    dc = createDiscordChannel({
      config: DiscordChannelSchema.parse({
        id: 'dc',
        type: 'discord',
        token: fake.token,
        api_url: fake.url,
        outbound: { rate: { enabled: false, per_bot: null, per_chat: null, per_group: null } },
      }),
      logger: silentLogger,
    });
    await dc.start({ ingress, logger: silentLogger });
  });
  afterAll(async () => {
    await dc.stop();
    await fake.close();
  });

  describe('when a message carries an attachment', () => {
    it('normalizes it with its CDN url, and opens it there without the bot token', async () => {
      const content = Buffer.from('GIF89a a small picture');
      const attachment = fake.addAttachment(content, { filename: 'cat.gif', content_type: 'image/gif' });
      fake.messageCreate({
        channel_id: DM,
        channel_type: 1,
        author: alice,
        content: '',
        attachments: [attachment],
      });
      const element = (await eventually(() => accepted[0]))?.elements[0];
      expect(element).toEqual({
        type: 'image',
        url: attachment.url,
        file_id: attachment.id,
        name: 'cat.gif',
        mime_type: 'image/gif',
        size: content.length,
      });

      const download = await dc.openMedia?.(element as never, AbortSignal.timeout(5_000));
      expect(await bytesOf(download?.body as AsyncIterable<Buffer>)).toEqual(content);
      expect(fake.attachmentRequests().at(-1)?.authorization).toBeUndefined();
    });
  });

  describe('when the element points off the CDN', () => {
    it('refuses it without a request', async () => {
      const before = fake.attachmentRequests().length;
      const error = await dc
        .openMedia?.(
          { type: 'file', url: 'https://169.254.169.254/latest/meta-data' },
          AbortSignal.timeout(5_000),
        )
        .catch((err: unknown) => err);
      expect(isSwitchboardError(error, 'SB_MEDIA_UNAVAILABLE')).toBe(true);
      expect(fake.attachmentRequests().length).toBe(before);
    });
  });
});
