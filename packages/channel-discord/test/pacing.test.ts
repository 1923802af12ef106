import { type OutboundObserver, silentLogger } from '@switchboard/core';
import { DISCORD_RATE_LIMITS, type FakeDiscord, startFakeDiscord } from '@switchboard/testkit/discord';
import { inboundMessage } from '@switchboard/testkit/inbound-message';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DiscordChannelSchema } from '../src/options.js';
import { createDiscordChannel } from '../src/index.js';

const origin = (channelId: string) =>
  inboundMessage({
    platform: 'discord',
    channel: 'dc',
    chat: { type: 'group', id: channelId },
    platform_message_id: '1300000000000000001',
  });

describe("createDiscordChannel pacing (against a fake enforcing Discord's 5 posts per 5 s per channel)", () => {
  let fake: FakeDiscord;
  beforeEach(async () => {
    fake = await startFakeDiscord({ rateLimits: DISCORD_RATE_LIMITS });
  });
  afterEach(() => fake.close());

  describe('when outbound.rate keeps its default (off: discord.js keeps the buckets)', () => {
    it("posts 8 replies in order within the route's limit, read from the X-RateLimit headers", async () => {
      const rateLimited: number[] = [];
      const observer: OutboundObserver = {
        paced: () => {},
        rateLimited: (_, retryAfterMs) => rateLimited.push(retryAfterMs),
      };
      const config = DiscordChannelSchema.parse({
        id: 'dc',
        type: 'discord',
        token: fake.token,
        api_url: fake.url,
      });
      const channel = createDiscordChannel({ config, logger: silentLogger, observer });
      const signal = new AbortController().signal;
      for (let index = 0; index < 8; index += 1) {
        await channel.send(origin('1400000000000000001'), [{ text: `reply ${index}` }], signal);
      }

      expect(fake.sentMessages().map((sent) => sent.body.content)).toEqual(
        Array.from({ length: 8 }, (_, index) => `reply ${index}`),
      );
      expect(fake.rateLimitViolations()).toBe(0);
      expect(rateLimited).toEqual([]);
    }, 30_000);
  });
});
