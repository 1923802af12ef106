import { type FakeSlack, startFakeSlack } from '@switchboard/testkit/slack';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SlackChannelSchema } from '../src/options.js';
import { probeSlackChannel } from '../src/probe.js';

const PROBE = { configPath: 'channels[2]', timeoutMs: 2000 };

describe('probeSlackChannel', () => {
  let fake: FakeSlack;
  beforeAll(async () => {
    fake = await startFakeSlack();
  });
  afterAll(() => fake.close());

  const config = (botToken: string) =>
    SlackChannelSchema.parse({
      id: 'sl',
      type: 'slack',
      bot_token: botToken,
      signing_secret: 'slack-signing-secret',
      api_url: fake.apiUrl,
    });

  describe('when the token is good', () => {
    it('names the bot and its workspace, calling auth.test alone', async () => {
      const before = fake.calls.length;
      expect(await probeSlackChannel(config('xoxb-test'), PROBE)).toEqual({
        level: 'ok',
        detail: 'Slack bot @switchboard in Switchboard Test',
      });
      expect(fake.calls.slice(before).map((call) => call.method)).toEqual(['auth.test']);
    });
  });

  describe('when Slack answers invalid_auth (with HTTP 200)', () => {
    it('fails naming the credential key', async () => {
      expect(await probeSlackChannel(config('xoxb-refused-token'), PROBE)).toEqual({
        level: 'fail',
        detail: 'Slack rejected the bot token (invalid_auth)',
        hint: 'check channels[2].bot_token (or the variable or file it reads)',
      });
    });
  });
});
