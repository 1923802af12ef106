import { type ChannelAdapter, type MediaRef, isSwitchboardError, silentLogger } from '@switchboard/core';
import { type FakeFeishu, startFakeFeishu } from '@switchboard/testkit/feishu';
import Fastify from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFeishuChannel } from '../src/channel.js';
import { feishuResourceUrl } from '../src/inbound/open-media.js';
import { FeishuChannelSchema } from '../src/options.js';

async function bytesOf(body: AsyncIterable<Buffer>): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of body) chunks.push(chunk);
  return Buffer.concat(chunks);
}

const codeOf = (error: unknown) => (isSwitchboardError(error) ? error.code : String(error));

/** A channel on `fake`, not started: files open on any replica. */
function channelOn(fake: FakeFeishu, appSecret = fake.appSecret): ChannelAdapter {
  return createFeishuChannel({
    config: FeishuChannelSchema.parse({
      id: 'fs',
      type: 'feishu',
      app_id: fake.appId,
      app_secret: appSecret,
      domain: fake.url,
      verification_token: fake.verificationToken,
    }),
    server: Fastify(),
    logger: silentLogger,
  });
}

function open(channel: ChannelAdapter, media: MediaRef) {
  return (channel.openMedia as NonNullable<ChannelAdapter['openMedia']>)(media, AbortSignal.timeout(5_000));
}

describe('feishuResourceUrl', () => {
  it.each([
    ['image', 'image'],
    ['file', 'file'],
    ['voice', 'file'],
    ['video', 'file'],
  ] as const)('asks for a %s element with type=%s', (type, asked) => {
    expect(feishuResourceUrl('https://open.feishu.cn', { type, message_id: 'om_1', file_id: 'k_1' })).toBe(
      `https://open.feishu.cn/open-apis/im/v1/messages/om_1/resources/k_1?type=${asked}`,
    );
  });

  it('escapes the ids into their path segments', () => {
    expect(feishuResourceUrl('http://fake', { type: 'file', message_id: 'om/../x', file_id: 'a?b' })).toBe(
      'http://fake/open-apis/im/v1/messages/om%2F..%2Fx/resources/a%3Fb?type=file',
    );
  });
});

describe('createFeishuChannel openMedia (against the fake open platform)', () => {
  let fake: FakeFeishu;
  let feishu: ChannelAdapter;

  beforeAll(async () => {
    fake = await startFakeFeishu();
    feishu = channelOn(fake);
  });
  afterAll(() => fake.close());

  describe('when the element names its message and file key', () => {
    it('streams the resource, fetched with the tenant token and type=image for an image', async () => {
      const content = Buffer.from('\x89PNG not really a png');
      fake.addResource({
        messageId: 'om_img',
        fileKey: 'img_v3_1',
        type: 'image',
        content,
        contentType: 'image/png',
      });
      const download = await open(feishu, { type: 'image', file_id: 'img_v3_1', message_id: 'om_img' });
      expect(download).toMatchObject({ size: content.length, mimeType: 'image/png' });
      expect(await bytesOf(download.body as AsyncIterable<Buffer>)).toEqual(content);
      const call = fake.callsTo('resource').at(-1);
      expect(call).toMatchObject({ messageId: 'om_img', resource: { fileKey: 'img_v3_1', type: 'image' } });
      expect(fake.issuedTokens()).toContain(call?.token);
    });

    it('asks for a voice note with type=file', async () => {
      const content = Buffer.from('OggS a voice note');
      fake.addResource({
        messageId: 'om_voice',
        fileKey: 'file_v3_9',
        type: 'file',
        content,
        contentType: 'audio/ogg',
      });
      const download = await open(feishu, { type: 'voice', file_id: 'file_v3_9', message_id: 'om_voice' });
      expect(await bytesOf(download.body as AsyncIterable<Buffer>)).toEqual(content);
    });
  });

  describe('when the cached tenant token stopped working (revoked, expired early)', () => {
    it('fetches a new token and streams the file, as a send does', async () => {
      const content = Buffer.from('a file after the revocation');
      fake.addResource({
        messageId: 'om_revoked',
        fileKey: 'file_v3_r',
        type: 'file',
        content,
        contentType: 'text/plain',
      });
      const channel = channelOn(fake);
      const media = { type: 'file', file_id: 'file_v3_r', message_id: 'om_revoked' } as const;
      await bytesOf((await open(channel, media)).body as AsyncIterable<Buffer>);
      fake.revokeTokens();
      const revoked = new Set(fake.issuedTokens());
      const download = await open(channel, media);
      expect(await bytesOf(download.body as AsyncIterable<Buffer>)).toEqual(content);
      expect(revoked.has(fake.callsTo('resource').at(-1)?.token as string)).toBe(false);
    });
  });

  describe('when the element names no message', () => {
    it('refuses with SB_MEDIA_UNAVAILABLE without asking Feishu', async () => {
      const before = fake.callsTo('resource').length;
      const error = await open(feishu, { type: 'image', file_id: 'img_v3_1' }).catch((err: unknown) => err);
      expect(codeOf(error)).toBe('SB_MEDIA_UNAVAILABLE');
      expect((error as Error).message).toContain('names no message');
      expect(fake.callsTo('resource')).toHaveLength(before);
    });
  });

  describe('when an id is not a Feishu id', () => {
    it.each([
      ['..', 'img_v3_1'],
      ['om_1', '.'],
      ['om_1', 'img v3'],
    ])('refuses message %j, file %j without asking Feishu', async (message_id, file_id) => {
      const before = fake.callsTo('resource').length;
      const error = await open(feishu, { type: 'image', file_id, message_id }).catch((err: unknown) => err);
      expect(codeOf(error)).toBe('SB_MEDIA_UNAVAILABLE');
      expect((error as Error).message).toContain('not a Feishu id');
      expect(fake.callsTo('resource')).toHaveLength(before);
    });
  });

  describe('when the file is not in the message', () => {
    it('rejects with SB_MEDIA_UNAVAILABLE naming the status', async () => {
      const error = await open(feishu, { type: 'file', file_id: 'file_v3_1', message_id: 'om_other' }).catch(
        (err: unknown) => err,
      );
      expect(codeOf(error)).toBe('SB_MEDIA_UNAVAILABLE');
      expect((error as { details?: { status?: number } }).details?.status).toBe(400);
    });
  });

  describe('when Feishu refuses the app secret', () => {
    it('rejects with SB_MEDIA_UNAVAILABLE without the secret, and asks for no file', async () => {
      const before = fake.callsTo('resource').length;
      const error = await open(channelOn(fake, 'a-wrong-secret'), {
        type: 'image',
        file_id: 'img_v3_1',
        message_id: 'om_img',
      }).catch((err: unknown) => err);
      expect(codeOf(error)).toBe('SB_MEDIA_UNAVAILABLE');
      expect(
        JSON.stringify({
          message: (error as Error).message,
          details: (error as { details?: unknown }).details,
        }),
      ).not.toContain('a-wrong-secret');
      expect(fake.callsTo('resource')).toHaveLength(before);
    });
  });
});
