import { type FakeFeishu, startFakeFeishu } from '@switchboard/testkit/feishu';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FeishuChannelSchema } from '../src/options.js';
import { probeFeishuChannel } from '../src/probe.js';

const PROBE = { configPath: 'channels[0]', timeoutMs: 2000 };

describe('probeFeishuChannel', () => {
  let fake: FakeFeishu;
  beforeAll(async () => {
    fake = await startFakeFeishu();
  });
  afterAll(() => fake.close());

  const config = (secret: string) =>
    FeishuChannelSchema.parse({
      id: 'fs',
      type: 'feishu',
      app_id: fake.appId,
      app_secret: secret,
      verification_token: fake.verificationToken,
      domain: fake.url,
    });

  describe('when the app secret is good', () => {
    it('gets a tenant access token and calls nothing else', async () => {
      expect(await probeFeishuChannel(config(fake.appSecret), PROBE)).toMatchObject({ level: 'ok' });
      expect(fake.calls.map((call) => call.endpoint)).toEqual(['token']);
    });
  });

  describe('when the open platform refuses the secret (code 10014 with HTTP 200)', () => {
    it('fails naming the credential key', async () => {
      expect(await probeFeishuChannel(config('refused-feishu-secret'), PROBE)).toEqual({
        level: 'fail',
        detail: 'Feishu rejected the app id and secret (10014: app secret invalid)',
        hint: 'check channels[0].app_secret (or the variable or file it reads)',
      });
    });
  });
});
