import { type FakeLine, startFakeLine } from '@switchboard/testkit/line';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LineChannelSchema } from '../src/options.js';
import { probeLineChannel } from '../src/probe.js';

const PROBE = { configPath: 'channels[0]', timeoutMs: 2000 };

describe('probeLineChannel', () => {
  let fake: FakeLine;
  beforeAll(async () => {
    fake = await startFakeLine();
  });
  afterAll(() => fake.close());

  const config = (token: string) =>
    LineChannelSchema.parse({
      id: 'ln',
      type: 'line',
      channel_secret: fake.channelSecret,
      channel_access_token: token,
      api_url: fake.url,
    });

  describe('when the token is good', () => {
    it('names the bot from GET /v2/bot/info', async () => {
      const result = await probeLineChannel(config(fake.channelAccessToken), PROBE);
      expect(result).toMatchObject({ level: 'ok', detail: expect.stringMatching(/^LINE bot Switchboard /) });
      expect(fake.calls.map((call) => call.endpoint)).toEqual(['info']);
    });
  });

  describe('when the token is refused', () => {
    it('fails naming the credential key', async () => {
      expect(await probeLineChannel(config('refused-line-token'), PROBE)).toMatchObject({
        level: 'fail',
        detail: expect.stringMatching(/^LINE rejected the channel access token \(HTTP 401/),
        hint: expect.stringContaining('channels[0].channel_access_token'),
      });
    });
  });
});
