import { type ChannelAdapter, isSwitchboardError, silentLogger } from '@switchboard/core';
import { type FakeLine, startFakeLine } from '@switchboard/testkit/line';
import Fastify from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLineChannel } from '../../src/channel.js';
import { LineChannelSchema } from '../../src/options.js';

async function bytesOf(body: AsyncIterable<Buffer>): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of body) chunks.push(chunk);
  return Buffer.concat(chunks);
}

describe('createLineChannel openMedia (against the fake LINE data API)', () => {
  let fake: FakeLine;
  let line: ChannelAdapter;

  beforeAll(async () => {
    fake = await startFakeLine();
    line = createLineChannel({
      config: LineChannelSchema.parse({
        id: 'ln',
        type: 'line',
        channel_secret: fake.channelSecret,
        channel_access_token: fake.channelAccessToken,
        api_url: fake.url,
        data_api_url: fake.url,
      }),
      server: Fastify(),
      logger: silentLogger,
    });
  });
  afterAll(() => fake.close());

  describe('when the message has content', () => {
    it('streams GET /v2/bot/message/{id}/content with its type and size', async () => {
      const content = Buffer.from('\u00ff\u00d8\u00ff a jpeg, roughly');
      fake.addContent('468789577898262530', content, 'image/jpeg');
      const download = await line.openMedia?.(
        { type: 'image', file_id: '468789577898262530' },
        AbortSignal.timeout(5_000),
      );
      expect(download).toMatchObject({ size: content.length, mimeType: 'image/jpeg' });
      expect(await bytesOf(download?.body as AsyncIterable<Buffer>)).toEqual(content);
    });
  });

  describe('when LINE no longer keeps the content', () => {
    it('rejects with SB_MEDIA_UNAVAILABLE naming 404, never the token', async () => {
      const error = await line
        .openMedia?.({ type: 'file', file_id: '1' }, AbortSignal.timeout(5_000))
        .catch((err: unknown) => err);
      expect(isSwitchboardError(error, 'SB_MEDIA_UNAVAILABLE')).toBe(true);
      expect((error as { details?: { status?: number } }).details?.status).toBe(404);
      expect(JSON.stringify({ message: (error as Error).message })).not.toContain(fake.channelAccessToken);
    });
  });
});
