import {
  type ChannelAdapter,
  type InboundMessage,
  type Ingress,
  type IngressResult,
  type Logger,
  isSwitchboardError,
  silentLogger,
} from '@switchboard/core';
import { eventually } from '@switchboard/testkit/eventually';
import { inboundMessage } from '@switchboard/testkit/inbound-message';
import { type FakeTelegram, startFakeTelegram } from '@switchboard/testkit/telegram';
import Fastify from 'fastify';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { TelegramChannelSchema, type TelegramChannelConfig } from '../src/options.js';
import { createTelegramChannel } from '../src/index.js';

/** These tests are not about pacing: calls go out as fast as they come. */
const NO_PACING = { enabled: false, per_bot: null, per_chat: null, per_group: null };

// biome-ignore lint/suspicious/noExplicitAny: Bot API payloads are read freely
type Json = Record<string, any>;

const alice = { id: 111_222_333, is_bot: false, first_name: 'Alice', username: 'alice' };
const privateChat = (user: { id: number; first_name: string }) => ({
  id: user.id,
  first_name: user.first_name,
  type: 'private',
});

function textUpdate(fake: FakeTelegram, fields: { chat: Json; text: string }): Json {
  return { message: fake.message({ from: alice, ...fields }) };
}

describe('createTelegramChannel (in process, against the fake Bot API)', () => {
  let fake: FakeTelegram;
  const channels: ChannelAdapter[] = [];

  beforeAll(async () => {
    fake = await startFakeTelegram();
  });
  afterEach(async () => {
    await Promise.all(channels.splice(0).map((channel) => channel.stop()));
  });
  afterAll(() => fake.close());

  function config(overrides: Partial<z.input<typeof TelegramChannelSchema>> = {}): TelegramChannelConfig {
    return TelegramChannelSchema.parse({
      id: 'tg',
      type: 'telegram',
      token: fake.token,
      api_root: fake.url,
      outbound: { concurrency: 8, rate: NO_PACING },
      ...overrides,
    });
  }

  /** An ingress that answers from a script (then `queued`) and records what it was given. */
  function scriptedIngress(script: IngressResult[]) {
    const accepted: Array<{ message: InboundMessage; deliveryId: string | undefined }> = [];
    const ingress: Ingress = {
      async accept(message, deliveryId) {
        accepted.push({ message, deliveryId });
        return script.shift() ?? { status: 'queued', pipeline: 'echo', session: 's', rule: null };
      },
      drop() {
        // Telegram redelivers what it was not answered 200 for: the channel never drops.
        throw new Error('unexpected drop');
      },
    };
    return { ingress, accepted };
  }

  function channel(options: Partial<Parameters<typeof createTelegramChannel>[0]> = {}) {
    const created = createTelegramChannel({
      config: config(),
      server: Fastify(),
      logger: silentLogger,
      ...options,
    });
    channels.push(created);
    return created;
  }

  describe('when polling and the ingress refuses an update', () => {
    it('does not confirm it, fetches it again after retryAfterMs, and confirms it once accepted', async () => {
      const { ingress, accepted } = scriptedIngress([
        { status: 'refused', reason: 'queue_full', retryAfterMs: 200 },
      ]);
      const tg = channel({ pollTimeoutMs: 1_000 });
      await tg.start({ ingress, logger: silentLogger });
      const update = fake.pushUpdate(textUpdate(fake, { chat: privateChat(alice), text: 'hold on' }));

      await eventually(() => accepted.length === 2);
      expect(accepted.map((entry) => entry.deliveryId)).toEqual([
        String(update.update_id),
        String(update.update_id),
      ]);
      const offsetsBeforeSecond = fake
        .callsOf('getUpdates')
        .filter((call) => call.at <= (accepted[1]?.message.received_at ?? 0))
        .map((call) => call.body.offset ?? 0);
      expect(Math.max(...offsetsBeforeSecond)).toBeLessThanOrEqual(update.update_id);
      await eventually(() => fake.confirmedOffset() === update.update_id + 1);
      expect(tg.health()).toEqual({ ready: true });
    });
  });

  describe('when stopped during a long poll', () => {
    it('aborts the poll at once and reports not ready', async () => {
      const { ingress } = scriptedIngress([]);
      const tg = channel({ pollTimeoutMs: 30_000 });
      await tg.start({ ingress, logger: silentLogger });
      const polls = fake.callsOf('getUpdates').length;
      await eventually(() => fake.callsOf('getUpdates').length > polls);
      const started = Date.now();
      await tg.stop();
      expect(Date.now() - started).toBeLessThan(1_000);
      expect(tg.health().ready).toBe(false);
    });
  });

  describe('when started again after a stop', () => {
    it('polls again from the confirmed offset and accepts new updates', async () => {
      const { ingress, accepted } = scriptedIngress([]);
      const tg = channel({ pollTimeoutMs: 1_000 });
      await tg.start({ ingress, logger: silentLogger });
      const first = fake.pushUpdate(textUpdate(fake, { chat: privateChat(alice), text: 'before' }));
      await eventually(() => accepted.length === 1);
      await tg.stop();
      const second = fake.pushUpdate(textUpdate(fake, { chat: privateChat(alice), text: 'after' }));
      await tg.start({ ingress, logger: silentLogger });
      await eventually(() => accepted.length === 2);
      expect(accepted.map((entry) => entry.deliveryId)).toEqual([
        String(first.update_id),
        String(second.update_id),
      ]);
      expect(tg.health()).toEqual({ ready: true });
    });
  });

  describe('when another getUpdates is still open just after start', () => {
    it('waits the 409 Conflict out, logging a warning and no error, and polls on', async () => {
      const { ingress, accepted } = scriptedIngress([]);
      const lines: string[] = [];
      const log = (level: string) => (_bindings: object, text: string) => void lines.push(`${level} ${text}`);
      const logger: Logger = {
        debug: log('debug'),
        info: log('info'),
        warn: log('warn'),
        error: log('error'),
        child: () => logger,
      };
      fake.failNext('getUpdates', 2, {
        status: 409,
        description:
          'Conflict: terminated by other getUpdates request; make sure that only one bot instance is running',
      });
      const tg = channel({ pollTimeoutMs: 1_000, pollRetry: { baseDelayMs: 50, maxDelayMs: 100 }, logger });
      await tg.start({ ingress, logger });
      const update = fake.pushUpdate(
        textUpdate(fake, { chat: privateChat(alice), text: 'after the conflict' }),
      );
      await eventually(() => accepted.length === 1);
      expect(accepted[0]?.deliveryId).toBe(String(update.update_id));
      expect(lines.filter((line) => line.includes('conflict'))).toEqual([
        'warn getUpdates conflict after start: waiting for the previous poller to end',
        'warn getUpdates conflict after start: waiting for the previous poller to end',
      ]);
      expect(lines.filter((line) => line.startsWith('error'))).toEqual([]);
      expect(tg.health()).toEqual({ ready: true });
    });
  });

  describe('when the token is wrong', () => {
    it('fails to start with SB_CHANNEL_AUTH_FAILED and does not reveal the token', async () => {
      const token = '999:wrong-token-value';
      const tg = channel({ config: config({ token }) });
      const error = await tg
        .start({ ingress: scriptedIngress([]).ingress, logger: silentLogger })
        .catch((err: unknown) => err);
      expect(isSwitchboardError(error, 'SB_CHANNEL_AUTH_FAILED')).toBe(true);
      expect(
        JSON.stringify({
          message: (error as Error).message,
          details: (error as { details?: unknown }).details,
        }),
      ).not.toContain(token);
    });
  });

  describe('when a webhook call arrives', () => {
    const secret = 'in-process-secret';
    const headers = { 'x-telegram-bot-api-secret-token': secret };

    it('answers 503 before start, 503 with Retry-After when refused, and 200 once accepted', async () => {
      const server = Fastify();
      const { ingress, accepted } = scriptedIngress([
        { status: 'refused', reason: 'draining', retryAfterMs: 5_000 },
      ]);
      const tg = channel({
        server,
        config: config({ id: 'hook', mode: 'webhook', webhook: { secret_token: secret } }),
      });
      const update = { update_id: 1, ...textUpdate(fake, { chat: privateChat(alice), text: 'hi' }) };
      const post = () => server.inject({ method: 'POST', url: '/telegram/hook', headers, payload: update });

      expect((await post()).statusCode).toBe(503);
      expect(accepted).toEqual([]);
      await tg.start({ ingress, logger: silentLogger });
      expect(tg.health()).toEqual({ ready: true });

      const refused = await post();
      expect(refused.statusCode).toBe(503);
      expect(refused.headers['retry-after']).toBe('5');
      expect(refused.json()).toMatchObject({ error: { code: 'SB_DRAINING' } });
      expect((await post()).statusCode).toBe(200);
      expect(accepted.map((entry) => entry.message.text)).toEqual(['hi', 'hi']);
    });
  });

  describe('when sendMessage hangs and the send deadline passes', () => {
    it('aborts the call in flight and rejects with the deadline reason', async () => {
      const chatId = 555_000_001;
      const origin = inboundMessage({
        chat: { type: 'person', id: String(chatId) },
        platform_message_id: `${chatId}:7`,
      });
      fake.failNext('sendMessage', 1, { hang: true });
      const deadline = new AbortController();
      const sent = channel()
        .send(origin, [{ text: 'hello' }], deadline.signal)
        .catch((error: unknown) => error);

      await eventually(() => fake.callsOf('sendMessage').some((call) => call.body.chat_id === chatId));
      const reason = new Error('send deadline passed');
      deadline.abort(reason);
      expect(await sent).toBe(reason);
      expect(fake.sentMessages().filter((sentMessage) => sentMessage.body.chat_id === chatId)).toEqual([]);
    });
  });

  describe('when a reply carries attachments', () => {
    const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 1, 2, 254, 255]);
    const pdf = Buffer.from('%PDF-1.4 a small document');

    it('uploads data with sendPhoto/sendDocument, passes a url as is, then sends the text, in order', async () => {
      const chatId = 555_000_002;
      const origin = inboundMessage({
        chat: { type: 'person', id: String(chatId) },
        platform_message_id: `${chatId}:7`,
      });
      await channel().send(
        origin,
        [
          {
            text: 'your chart',
            attachments: [
              { type: 'image', data: png.toString('base64'), name: 'chart.png', mime_type: 'image/png' },
              { type: 'file', data: pdf.toString('base64') },
              { type: 'audio', url: 'https://example.com/a.mp3' },
            ],
          },
        ],
        new AbortController().signal,
      );

      const order = fake.calls
        .filter((call) => call.body.chat_id === chatId && call.status === 200)
        .map((call) => call.method);
      expect(order).toEqual(['sendPhoto', 'sendDocument', 'sendAudio', 'sendMessage']);
      const media = fake.sentMedia().filter((sent) => sent.body.chat_id === chatId);
      expect(media[0]?.file?.bytes.equals(png)).toBe(true);
      expect(media[0]?.file?.filename).toBe('chart.png');
      expect(media[0]?.body.reply_parameters).toEqual({ message_id: 7, allow_sending_without_reply: true });
      expect(media[1]?.file?.bytes.equals(pdf)).toBe(true);
      expect(media[2]).toMatchObject({ method: 'sendAudio', url: 'https://example.com/a.mp3' });
      expect(media[2]?.file).toBeUndefined();
      expect(fake.deliveredTo(chatId)).toEqual(['your chart']);
    });

    it('tries an upload the platform answered 500 again, and sends it once', async () => {
      const chatId = 555_000_003;
      const origin = inboundMessage({
        chat: { type: 'person', id: String(chatId) },
        platform_message_id: `${chatId}:8`,
      });
      fake.failNext('sendPhoto', 1, { status: 500 });
      await channel().send(
        origin,
        [{ attachments: [{ type: 'image', data: png.toString('base64') }] }],
        new AbortController().signal,
      );

      expect(
        fake
          .callsOf('sendPhoto')
          .filter((call) => call.body.chat_id === chatId)
          .map((call) => call.status),
      ).toEqual([500, 200]);
      const media = fake.sentMedia().filter((sent) => sent.body.chat_id === chatId);
      expect(media).toHaveLength(1);
      expect(media[0]?.file?.bytes.equals(png)).toBe(true);
    });
  });
});
