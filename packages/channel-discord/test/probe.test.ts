import { type FakeDiscord, startFakeDiscord } from '@switchboard/testkit/discord';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DiscordChannelSchema } from '../src/options.js';
import { probeDiscordChannel } from '../src/probe.js';

const PROBE = { configPath: 'channels[0]', timeoutMs: 2000 };

describe('probeDiscordChannel', () => {
  let fake: FakeDiscord;
  beforeAll(async () => {
    fake = await startFakeDiscord();
  });
  afterAll(() => fake.close());

  const config = (token: string) =>
    DiscordChannelSchema.parse({ id: 'dc', type: 'discord', token, api_url: fake.url });

  describe('when the token is good', () => {
    it('names the bot from GET /users/@me, without logging in', async () => {
      expect(await probeDiscordChannel(config(fake.token), PROBE)).toEqual({
        level: 'ok',
        detail: `Discord bot ${fake.botUser.username}`,
      });
      expect(fake.requests.map((request) => `${request.method} ${request.path}`)).toEqual(['GET /users/@me']);
      expect(fake.stats.identifies).toBe(0);
    });
  });

  describe('when the token is refused', () => {
    it('fails naming the credential key', async () => {
      expect(await probeDiscordChannel(config('refused-discord-token'), PROBE)).toMatchObject({
        level: 'fail',
        detail: 'Discord rejected the bot token (HTTP 401: 401: Unauthorized)',
        hint: expect.stringContaining('channels[0].token'),
      });
    });
  });
});
