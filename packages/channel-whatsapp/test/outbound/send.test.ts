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
});
