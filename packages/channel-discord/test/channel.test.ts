import { type Ingress, silentLogger } from '@switchboard/core';
import { type FakeDiscord, startFakeDiscord } from '@switchboard/testkit/discord';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createDiscordChannel } from '../src/index.js';

// Paths the YAML cannot reach (factory options) run in process against the fake Discord.
describe('createDiscordChannel (in process, against the fake Discord)', () => {
  let fake: FakeDiscord;
  beforeEach(async () => {
    fake = await startFakeDiscord();
  });
  afterEach(() => fake.close());

  describe('when the gateway is not ready within startTimeoutMs', () => {
    it('rejects start with a retryable error and closes the client', async () => {
      fake.failNext(1, { hang: true }); // GET /gateway/bot never answers
      const channel = createDiscordChannel({
        config: {
          id: 'dc',
          type: 'discord',
          token: fake.token,
          apiUrl: fake.url,
          policy: { admission: { require_mention: true, prefixes: [] }, sessionScope: 'chat' },
        },
        logger: silentLogger,
        startTimeoutMs: 300,
      });
      const ingress: Ingress = { accept: async () => ({ status: 'duplicate' }) };

      const error = await channel
        .start({ ingress, logger: silentLogger })
        .catch((rejection: unknown) => rejection);
      expect(error).toMatchObject({
        code: 'SB_CHANNEL_UNREACHABLE',
        retryable: true,
        message:
          'channels[dc]: could not connect to the Discord gateway: the gateway was not ready within 300 ms',
      });
      expect(channel.health().ready).toBe(false);
      expect(fake.stats.connections).toBe(0);
    });
  });
});
