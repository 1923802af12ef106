import { type ChannelAdapter, SwitchboardError, silentLogger } from '@switchboard/core';
import { inboundMessage } from '@switchboard/testkit/inbound-message';
import { type FakeWhatsApp, startFakeWhatsApp } from '@switchboard/testkit/whatsapp';
import Fastify from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createWhatsAppChannel } from '../../src/channel.js';
import { WhatsAppChannelSchema } from '../../src/options.js';
import { MAX_TEXT_CHARS } from '../../src/outbound/send.js';

const USER = '16505551234';
const origin = inboundMessage({
  platform: 'whatsapp',
  channel: 'wa',
  chat: { type: 'person', id: USER },
  sender: { id: USER, is_bot: false },
});

let fake: FakeWhatsApp;
let channel: ChannelAdapter;
beforeEach(async () => {
  fake = await startFakeWhatsApp();
  const config = WhatsAppChannelSchema.parse({
    id: 'wa',
    type: 'whatsapp',
    phone_number_id: fake.phoneNumberId,
    access_token: fake.accessToken,
    app_secret: fake.appSecret,
    verify_token: fake.verifyToken,
    api_url: fake.url,
    outbound: { rate: { enabled: false }, send_timeout: '1s' },
  });
  channel = createWhatsAppChannel({ config, server: Fastify(), logger: silentLogger });
});
afterEach(() => fake.close());

/** What `send` rejected with. */
async function failureOf(signal = AbortSignal.timeout(5_000)): Promise<SwitchboardError> {
  const error = await channel.send(origin, [{ text: 'hello' }], signal).catch((caught: unknown) => caught);
  expect(error).toBeInstanceOf(SwitchboardError);
  return error as SwitchboardError;
}

describe('WhatsApp send', () => {
  describe('when a reply is longer than one text message', () => {
    it('sends it cut at 4096 characters, in order, after the replies before it', async () => {
      const long = `${'a'.repeat(MAX_TEXT_CHARS)}${'b'.repeat(MAX_TEXT_CHARS)}c`;
      await channel.send(origin, [{ text: 'first' }, { text: long }], AbortSignal.timeout(5_000));
      expect(fake.deliveredTo(USER)).toEqual([
        'first',
        'a'.repeat(MAX_TEXT_CHARS),
        'b'.repeat(MAX_TEXT_CHARS),
        'c',
      ]);
    });
  });

  describe('when a text after the first fails and the send is tried again', () => {
    const answer = [{ text: 'one' }, { text: 'two' }, { text: 'three' }];
    const tryToSend = (options?: { turn: string }) =>
      channel.send(origin, answer, AbortSignal.timeout(5_000), options).catch((error: unknown) => error);

    it.each([
      ['a pair-rate refusal (131056)', { kind: 'rate_limited', code: 131056, status: 400 }],
      ['a 500', { kind: 'http_status', status: 500 }],
    ] as const)('after %s it posts only the texts not posted yet', async (_name, failure) => {
      fake.failNext(1, failure, { after: 1 });
      expect(await tryToSend()).toBeInstanceOf(SwitchboardError);
      expect(fake.deliveredTo(USER)).toEqual(['one']);
      await channel.send(origin, answer, AbortSignal.timeout(5_000));
      expect(fake.deliveredTo(USER)).toEqual(['one', 'two', 'three']);
    });

    it('keys what was posted on the turn, so that another turn posts its texts anew', async () => {
      fake.failNext(1, { kind: 'http_status', status: 500 }, { after: 1 });
      await tryToSend({ turn: 'turn-1' });
      await channel.send(origin, answer, AbortSignal.timeout(5_000), { turn: 'turn-1' });
      await channel.send(origin, answer, AbortSignal.timeout(5_000), { turn: 'turn-2' });
      expect(fake.deliveredTo(USER)).toEqual(['one', 'two', 'three', 'one', 'two', 'three']);
    });

    it('posts a text of another place or wording anew', async () => {
      await channel.send(origin, [{ text: 'one' }], AbortSignal.timeout(5_000));
      await channel.send(origin, [{ text: 'zero' }, { text: 'one' }], AbortSignal.timeout(5_000));
      await channel.send(origin, [{ text: 'uno' }], AbortSignal.timeout(5_000));
      expect(fake.deliveredTo(USER)).toEqual(['one', 'zero', 'one', 'uno']);
    });
  });

  describe('when the Cloud API rate-limits the call', () => {
    it('rejects with a retryable SB_CHANNEL_RATE_LIMITED carrying Retry-After', async () => {
      fake.failNext(1, { kind: 'rate_limited', retryAfterSec: 3 });
      const error = await failureOf();
      expect(error).toMatchObject({ code: 'SB_CHANNEL_RATE_LIMITED', retryable: true, retryAfterMs: 3_000 });
    });

    it.each([
      [130429, 429, 1_000],
      [131056, 400, 6_000],
      [80007, 400, 60_000],
    ] as const)(
      'reads Graph code %i (HTTP %i) as a rate limit with a %i ms hint',
      async (code, status, waitMs) => {
        fake.failNext(1, { kind: 'rate_limited', code, status });
        const error = await failureOf();
        expect(error).toMatchObject({
          code: 'SB_CHANNEL_RATE_LIMITED',
          retryable: true,
          retryAfterMs: waitMs,
        });
        expect(error.details).toMatchObject({ code });
      },
    );
  });

  describe('when Meta refuses the access token', () => {
    it('rejects with SB_CHANNEL_AUTH_FAILED naming the option, never the token', async () => {
      fake.failNext(1, { kind: 'auth' });
      const error = await failureOf();
      expect(error.code).toBe('SB_CHANNEL_AUTH_FAILED');
      expect(error.retryable).toBe(false);
      expect(error.message).toContain('channels[wa].access_token');
      expect(JSON.stringify({ message: error.message, details: error.details })).not.toContain(
        fake.accessToken,
      );
    });
  });

  describe('when the user last wrote more than 24 hours ago (131047)', () => {
    it('rejects with a final SB_CHANNEL_SEND_FAILED naming the customer-service window', async () => {
      fake.failNext(1, { kind: 'outside_window' });
      const error = await failureOf();
      expect(error).toMatchObject({ code: 'SB_CHANNEL_SEND_FAILED', retryable: false });
      expect(error.message).toContain('outside the 24-hour customer-service window');
      expect(error.message).toContain('131047');
      expect(error.details).toMatchObject({ status: 400, code: 131047 });
      expect(JSON.stringify(error)).not.toContain(fake.accessToken);
    });
  });

  describe('when the Cloud API fails or does not answer', () => {
    it('rejects a 500 with a retryable SB_CHANNEL_SEND_FAILED', async () => {
      fake.failNext(1, { kind: 'http_status', status: 500 });
      expect(await failureOf()).toMatchObject({ code: 'SB_CHANNEL_SEND_FAILED', retryable: true });
    });

    it('rejects a refused message with a final SB_CHANNEL_SEND_FAILED', async () => {
      fake.failNext(1, {
        kind: 'http_status',
        status: 400,
        code: 131026,
        message: '(#131026) Message undeliverable',
      });
      expect(await failureOf()).toMatchObject({ code: 'SB_CHANNEL_SEND_FAILED', retryable: false });
    });

    it('reads the Graph code from the body, not from the wording of the message', async () => {
      fake.failNext(1, { kind: 'http_status', status: 400, code: 131056, message: 'Pair rate limit hit' });
      expect(await failureOf()).toMatchObject({ code: 'SB_CHANNEL_RATE_LIMITED', retryAfterMs: 6_000 });
    });

    it('gives up a hung call after send_timeout with a retryable SB_CHANNEL_SEND_FAILED', async () => {
      fake.failNext(1, { kind: 'hang' });
      const error = await failureOf();
      expect(error).toMatchObject({ code: 'SB_CHANNEL_SEND_FAILED', retryable: true });
      expect(error.message).toContain('no answer within 1000 ms');
    });

    it("rejects with the deadline's reason once the send's signal aborts", async () => {
      fake.failNext(1, { kind: 'hang' });
      const controller = new AbortController();
      const sending = channel.send(origin, [{ text: 'x' }], controller.signal);
      const reason = new Error('deadline');
      controller.abort(reason);
      await expect(sending).rejects.toBe(reason);
    });
  });

  describe('when a reply carries an image as data and a text', () => {
    const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 254, 255]);
    const image = {
      type: 'image',
      data: png.toString('base64'),
      name: 'chart.png',
      mime_type: 'image/png',
    } as const;

    it('uploads the bytes, then sends the image by its media id, then the text, in that order', async () => {
      await channel.send(
        origin,
        [{ text: 'here is your chart', attachments: [image] }],
        AbortSignal.timeout(5_000),
      );
      expect(fake.calls.map((call) => `${call.method} ${call.path}`)).toEqual([
        `POST /v21.0/${fake.phoneNumberId}/media`,
        `POST /v21.0/${fake.phoneNumberId}/messages`,
        `POST /v21.0/${fake.phoneNumberId}/messages`,
      ]);
      const [upload] = fake.uploads();
      expect(fake.calls[0]).toMatchObject({
        token: fake.accessToken,
        body: { messaging_product: 'whatsapp', type: 'image/png' },
      });
      expect(upload?.file.bytes.equals(png)).toBe(true);
      expect(upload?.file).toMatchObject({ filename: 'chart.png', contentType: 'image/png' });
      expect(fake.sent().map(({ type, text, media }) => ({ type, text, media }))).toEqual([
        { type: 'image', text: '', media: { id: upload?.id } },
        { type: 'text', text: 'here is your chart', media: undefined },
      ]);
    });
  });

  describe('when a reply carries attachments by url', () => {
    it('sends each by link, a file as a document with its name, without uploading', async () => {
      const attachments = [
        {
          type: 'file',
          url: 'https://files.example.com/q3/report.pdf?sig=abc',
          mime_type: 'application/pdf',
        },
        { type: 'audio', url: 'https://files.example.com/hello.mp3' },
      ] as const;
      await channel.send(origin, [{ attachments: [...attachments] }], AbortSignal.timeout(5_000));
      expect(fake.uploads()).toEqual([]);
      expect(fake.sent().map(({ type, media }) => ({ type, media }))).toEqual([
        { type: 'document', media: { link: attachments[0].url, filename: 'report.pdf' } },
        { type: 'audio', media: { link: attachments[1].url } },
      ]);
    });
  });

  describe('when WhatsApp would not take an attachment', () => {
    it.each([
      [
        'a WebP image',
        { type: 'image', url: 'https://example.com/a.webp', mime_type: 'image/webp' },
        'WhatsApp does not take image/webp as an image',
      ],
      [
        'data without a mime type',
        { type: 'file', data: Buffer.from('hi').toString('base64') },
        'a data attachment needs a mime_type',
      ],
    ] as const)(
      'rejects %s with a final SB_CHANNEL_ATTACHMENTS_UNSUPPORTED naming it, before any call',
      async (_case, refused, problem) => {
        const ok = { type: 'image', url: 'https://example.com/a.png', mime_type: 'image/png' } as const;
        const replies = [{ text: 'first' }, { text: 'second', attachments: [ok, refused] }];
        const error = await channel
          .send(origin, replies, AbortSignal.timeout(5_000))
          .catch((caught: unknown) => caught);
        expect(error).toMatchObject({
          code: 'SB_CHANNEL_ATTACHMENTS_UNSUPPORTED',
          details: { channel: 'wa', refused: [{ reply: 1, attachment: 1, type: refused.type }] },
        });
        expect((error as SwitchboardError).retryable).not.toBe(true);
        expect((error as SwitchboardError).message).toContain(
          `cannot send replies[1].attachments[1] (${refused.type}): ${problem}`,
        );
        expect(fake.calls).toEqual([]);
      },
    );
  });

  describe('when the upload fails', () => {
    const file = {
      type: 'file',
      data: Buffer.from('minutes').toString('base64'),
      name: 'minutes.txt',
      mime_type: 'text/plain',
    } as const;

    it('rejects a 500 with a retryable SB_CHANNEL_SEND_FAILED naming the upload, and sends nothing', async () => {
      fake.failNextUploads(1, { kind: 'http_status', status: 500 });
      const error = await channel
        .send(origin, [{ text: 'after', attachments: [file] }], AbortSignal.timeout(5_000))
        .catch((caught: unknown) => caught);
      expect(error).toMatchObject({ code: 'SB_CHANNEL_SEND_FAILED', retryable: true });
      expect((error as SwitchboardError).message).toContain('POST /media');
      expect(fake.sent()).toEqual([]);
    });

    it('rejects a refused upload with a final SB_CHANNEL_SEND_FAILED', async () => {
      fake.failNextUploads(1, {
        kind: 'http_status',
        status: 400,
        code: 100,
        message: '(#100) Invalid parameter',
      });
      const error = await channel
        .send(origin, [{ attachments: [file] }], AbortSignal.timeout(5_000))
        .catch((caught: unknown) => caught);
      expect(error).toMatchObject({ code: 'SB_CHANNEL_SEND_FAILED', retryable: false });
    });
  });
});
