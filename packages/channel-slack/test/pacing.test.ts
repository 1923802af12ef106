import { type ChannelAdapter, type OutboundObserver, silentLogger } from '@switchboard/core';
import { inboundMessage } from '@switchboard/testkit/inbound-message';
import { type FakeSlack, SLACK_RATE_LIMITS, startFakeSlack } from '@switchboard/testkit/slack';
import Fastify from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SlackChannelSchema } from '../src/options.js';
import { createSlackChannel } from '../src/index.js';

/** What the channel reported: each pacing wait and each 429. */
function recordingObserver() {
  const waits: number[] = [];
  const rateLimited: number[] = [];
  const observer: OutboundObserver = {
    paced: (_, waitedMs) => waits.push(waitedMs),
    rateLimited: (_, retryAfterMs) => rateLimited.push(retryAfterMs),
  };
  return { observer, waits, rateLimited };
}

const origin = (channel: string) =>
  inboundMessage({
    platform: 'slack',
    channel: 'sl',
    chat: { type: 'group', id: channel },
    platform_message_id: `${channel}:1700000000.000100`,
  });

const slackChannels = (count: number) => Array.from({ length: count }, (_, index) => `C0PACE${index}`);

/** Sends `perChannel` replies into every Slack channel, one after the other per channel, all channels at once. */
async function replyToAll(adapter: ChannelAdapter, channels: string[], perChannel: number) {
  const signal = new AbortController().signal;
  return Promise.allSettled(
    channels.map(async (channel) => {
      for (let index = 0; index < perChannel; index += 1) {
        await adapter.send(origin(channel), [{ text: `reply ${index}` }], signal);
      }
    }),
  );
}

describe('createSlackChannel pacing (against a fake enforcing 1 message a second per channel)', () => {
  let fake: FakeSlack;

  beforeEach(async () => {
    fake = await startFakeSlack({ rateLimits: SLACK_RATE_LIMITS });
  });
  afterEach(() => fake.close());

  /** The channel as the config schema builds it: Slack's default `outbound.rate` unless `rate` says otherwise. */
  function channel(observer: OutboundObserver, rate?: Record<string, unknown>) {
    const config = SlackChannelSchema.parse({
      id: 'sl',
      type: 'slack',
      bot_token: 'xoxb-test',
      signing_secret: 'signing-secret',
      api_url: fake.apiUrl,
      bot_user_id: 'UBOT',
      ...(rate === undefined ? {} : { outbound: { rate } }),
    });
    return createSlackChannel({ config, server: Fastify(), logger: silentLogger, observer });
  }

  describe("when pacing runs with Slack's defaults", () => {
    it('delivers 30 replies to 10 channels, in order per channel, and the fake counts no violation', async () => {
      const { observer, waits, rateLimited } = recordingObserver();
      const channels = slackChannels(10);
      const results = await replyToAll(channel(observer), channels, 3);

      expect(results.filter((result) => result.status === 'rejected')).toEqual([]);
      for (const id of channels) expect(fake.deliveredTo(id)).toEqual(['reply 0', 'reply 1', 'reply 2']);
      expect(fake.rateLimitViolations()).toBe(0);
      expect(rateLimited).toEqual([]);
      expect(waits).toHaveLength(30);
      expect(waits.filter((ms) => ms > 0).length).toBeGreaterThan(0);
    });
  });

  describe('when pacing is switched off', () => {
    it("meets the fake's 429s, reports each one, and still delivers after Retry-After", async () => {
      const { observer, waits, rateLimited } = recordingObserver();
      const channels = slackChannels(10);
      const results = await replyToAll(channel(observer, { enabled: false }), channels, 3);

      expect(fake.rateLimitViolations()).toBeGreaterThan(0);
      expect(rateLimited).toHaveLength(fake.rateLimitViolations());
      expect(rateLimited.every((ms) => ms >= 1000)).toBe(true);
      expect(waits.every((ms) => ms === 0)).toBe(true);
      expect(results.filter((result) => result.status === 'rejected')).toEqual([]);
      for (const id of channels) expect(fake.deliveredTo(id)).toEqual(['reply 0', 'reply 1', 'reply 2']);
    });
  });

  describe('when a reply carries a file', () => {
    it('paces the share of the file and the message, not the upload URL or the upload', async () => {
      const { observer, waits } = recordingObserver();
      const data = Buffer.from('a small file').toString('base64');
      await channel(observer).send(
        origin('C0PACED'),
        [{ text: 'with a file', attachments: [{ type: 'file', data, name: 'a.txt' }] }],
        new AbortController().signal,
      );

      expect(fake.filesSharedTo('C0PACED')).toHaveLength(1);
      expect(fake.deliveredTo('C0PACED')).toEqual(['with a file']);
      expect(waits).toHaveLength(2);
      expect(fake.rateLimitViolations()).toBe(0);
    });
  });
});
