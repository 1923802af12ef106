import { type ChannelAdapter, isSwitchboardError, silentLogger } from '@switchboard/core';
import { type FakeWhatsApp, startFakeWhatsApp } from '@switchboard/testkit/whatsapp';
import Fastify from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWhatsAppChannel } from '../../src/channel.js';
import { WhatsAppChannelSchema } from '../../src/options.js';

async function bytesOf(body: AsyncIterable<Buffer>): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of body) chunks.push(chunk);
  return Buffer.concat(chunks);
}

describe('createWhatsAppChannel openMedia (against the fake Graph API)', () => {
  let fake: FakeWhatsApp;
  let wa: ChannelAdapter;

  beforeAll(async () => {
    fake = await startFakeWhatsApp();
    wa = createWhatsAppChannel({
      config: WhatsAppChannelSchema.parse({
        id: 'wa',
        type: 'whatsapp',
        phone_number_id: fake.phoneNumberId,
        access_token: fake.accessToken,
        app_secret: fake.appSecret,
        verify_token: fake.verifyToken,
        api_url: fake.url,
      }),
      server: Fastify(),
      logger: silentLogger,
    });
  });
  afterAll(() => fake.close());

  describe('when the media id is known', () => {
    it('looks up its URL, then streams it with the access token, with its type and size', async () => {
      const content = Buffer.from('OggS a voice note, more or less');
      const id = fake.addMedia(content, 'audio/ogg');
      const download = await wa.openMedia?.({ type: 'voice', file_id: id }, AbortSignal.timeout(5_000));
      expect(download).toMatchObject({ size: content.length, mimeType: 'audio/ogg' });
      expect(await bytesOf(download?.body as AsyncIterable<Buffer>)).toEqual(content);
      expect(fake.calls.filter((call) => call.method === 'GET').map((call) => call.path)).toEqual([
        expect.stringMatching(new RegExp(`^/v\\d+\\.\\d+/${id}$`)),
        `/media-download/${id}`,
      ]);
    });
  });

  describe('when Meta does not know the media id', () => {
    it('rejects with SB_MEDIA_UNAVAILABLE naming the status, never the token', async () => {
      const error = await wa
        .openMedia?.({ type: 'image', file_id: '42' }, AbortSignal.timeout(5_000))
        .catch((err: unknown) => err);
      expect(isSwitchboardError(error, 'SB_MEDIA_UNAVAILABLE')).toBe(true);
      expect((error as Error).message).not.toContain(fake.accessToken);
    });
  });
});
