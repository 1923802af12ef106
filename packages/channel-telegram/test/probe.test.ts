import { type FakeTelegram, startFakeTelegram } from '@switchboard/testkit/telegram';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TelegramChannelSchema } from '../src/options.js';
import { probeTelegramChannel } from '../src/probe.js';

const PROBE = { configPath: 'channels[0]', timeoutMs: 2000 };

describe('probeTelegramChannel', () => {
  let fake: FakeTelegram;
  beforeAll(async () => {
    fake = await startFakeTelegram();
  });
  afterAll(() => fake.close());

  const config = (fields: Record<string, unknown> = {}) =>
    TelegramChannelSchema.parse({
      id: 'tg',
      type: 'telegram',
      token: fake.token,
      api_root: fake.url,
      ...fields,
    });
  const webhook = { mode: 'webhook', webhook: { secret_token: 'doctor-secret' } };

  describe('when the token is good', () => {
    it('names the bot, with getMe alone in polling mode', async () => {
      const before = fake.calls.length;
      expect(await probeTelegramChannel(config(), PROBE)).toEqual({
        level: 'ok',
        detail: 'Telegram bot @switchboard_bot',
      });
      expect(fake.calls.slice(before).map((call) => call.method)).toEqual(['getMe']);
    });
  });

  describe('when the token is refused', () => {
    it('fails naming the credential key, without the token', async () => {
      const result = await probeTelegramChannel(config({ token: '123456789:refused-token' }), PROBE);
      expect(result).toMatchObject({
        level: 'fail',
        detail: 'Telegram rejected the bot token (HTTP 401: Unauthorized)',
        hint: expect.stringContaining('channels[0].token'),
      });
      expect(JSON.stringify(result)).not.toContain('refused-token');
    });

    it('masks the token when the answer quotes the URL that holds it (a proxy, a self-hosted Bot API)', async () => {
      fake.failNext('getMe', 1, { status: 404, description: `Not Found: /bot${fake.token}/getMe` });
      const result = await probeTelegramChannel(config(), PROBE);
      expect(result).toMatchObject({ level: 'fail', detail: expect.stringContaining('Not Found: /bot') });
      expect(JSON.stringify(result)).not.toContain(fake.token.split(':')[1]);
    });
  });

  describe('when the API does not answer', () => {
    it('fails naming the API root', async () => {
      fake.failNext('getMe', 1, { hang: true });
      const result = await probeTelegramChannel(config(), { ...PROBE, timeoutMs: 200 });
      expect(result).toMatchObject({ level: 'fail', detail: expect.stringContaining(`API at ${fake.url}`) });
      expect(result.detail).toContain('no answer within 200 ms');
    });
  });

  describe('when in webhook mode', () => {
    it('fails without a webhook set nor webhook.url to set one', async () => {
      const result = await probeTelegramChannel(config(webhook), PROBE);
      expect(result).toMatchObject({
        level: 'fail',
        hint: expect.stringContaining('channels[0].webhook.url'),
      });
    });

    it("fails with Telegram's last delivery error", async () => {
      fake.setWebhookError('Wrong response from the webhook: 502 Bad Gateway');
      try {
        const result = await probeTelegramChannel(
          config({ ...webhook, webhook: { ...webhook.webhook, url: 'https://bot.example.test/tg' } }),
          PROBE,
        );
        expect(result.level).toBe('fail');
        expect(result.detail).toContain('502 Bad Gateway');
      } finally {
        fake.setWebhookError(null);
      }
    });
  });
});
