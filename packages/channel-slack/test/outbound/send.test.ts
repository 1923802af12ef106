import { type ChannelAdapter, type Logger, silentLogger } from '@switchboard/core';
import { eventually } from '@switchboard/testkit/eventually';
import { inboundMessage } from '@switchboard/testkit/inbound-message';
import { type FakeSlack, startFakeSlack } from '@switchboard/testkit/slack';
import Fastify from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SlackChannelSchema } from '../../src/options.js';
import { type SlackChannelOptions, createSlackChannel } from '../../src/index.js';

const origin = inboundMessage({
  platform: 'slack',
  channel: 'sl',
  chat: { type: 'person', id: 'D0SEND' },
  platform_message_id: 'D0SEND:1718000000.000100',
});

// The whole send path (Bolt's WebClient, fetch, the retry loop) against the fake Web API.
describe('slack channel send (against the fake Web API)', () => {
  let fake: FakeSlack;
  beforeEach(async () => {
    fake = await startFakeSlack();
  });
  afterEach(() => fake.close());

  function channel(options: Partial<SlackChannelOptions> = {}): ChannelAdapter {
    const config = SlackChannelSchema.parse({
      id: 'sl',
      type: 'slack',
      bot_token: 'xoxb-test',
      signing_secret: 'secret',
      bot_user_id: 'UBOT',
      api_url: fake.apiUrl,
    });
    return createSlackChannel({ config, server: Fastify(), logger: silentLogger, ...options });
  }

  describe('when chat.postMessage hangs and the send deadline passes', () => {
    it('aborts the request and rejects with the deadline reason', async () => {
      fake.failNext(1, { kind: 'hang' });
      const deadline = new AbortController();
      const sent = channel()
        .send(origin, [{ text: 'hi' }], deadline.signal)
        .catch((error: unknown) => error);
      await fake.waitForCalls('chat.postMessage', 1);

      const reason = new Error('send deadline passed');
      deadline.abort(reason);
      expect(await sent).toBe(reason);
      // Not retried after the deadline: the client's own retries are off.
      expect(fake.callsTo('chat.postMessage')).toHaveLength(1);
    });
  });

  describe('when the deadline passes while a 5xx retry is waiting', () => {
    it('stops waiting and rejects with the deadline reason', async () => {
      fake.failNext(1, { kind: 'http_status', status: 503 });
      const warnings: string[] = [];
      const logger: Logger = {
        ...silentLogger,
        warn: (_bindings: object, message: string) => {
          warnings.push(message);
        },
        child: () => logger,
      };
      const deadline = new AbortController();
      const sent = channel({ logger, transientRetry: { baseDelayMs: 600_000, maxDelayMs: 600_000 } })
        .send(origin, [{ text: 'hi' }], deadline.signal)
        .catch((error: unknown) => error);
      // Logged just before the wait starts.
      await eventually(() => warnings.includes('send failed, retrying'));

      const reason = new Error('send deadline passed');
      deadline.abort(reason);
      expect(await sent).toBe(reason);
      expect(fake.callsTo('chat.postMessage')).toHaveLength(1);
    });
  });

  describe('when Slack answers 5xx once', () => {
    it('retries and posts the reply', async () => {
      fake.failNext(1, { kind: 'http_status', status: 500 });
      await channel({ transientRetry: { baseDelayMs: 10, maxDelayMs: 10 } }).send(
        origin,
        [{ text: 'after a hiccup' }],
        new AbortController().signal,
      );
      const posts = fake.callsTo('chat.postMessage');
      expect(posts).toHaveLength(2);
      expect(posts[1]?.body).toMatchObject({ channel: 'D0SEND', text: 'after a hiccup' });
    });
  });
});
