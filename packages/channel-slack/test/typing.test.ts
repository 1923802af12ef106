import { silentLogger } from '@switchboard/core';
import { inboundMessage } from '@switchboard/testkit/inbound-message';
import { type FakeSlack, startFakeSlack } from '@switchboard/testkit/slack';
import Fastify from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SlackChannelSchema } from '../src/options.js';
import { createSlackChannel } from '../src/index.js';

describe('createSlackChannel typing', () => {
  let fake: FakeSlack;

  beforeEach(async () => {
    fake = await startFakeSlack();
  });
  afterEach(() => fake.close());

  function channel() {
    const config = SlackChannelSchema.parse({
      id: 'sl',
      type: 'slack',
      bot_token: 'xoxb-test',
      signing_secret: 'signing-secret',
      api_url: fake.apiUrl,
      bot_user_id: 'UBOT',
    });
    return createSlackChannel({ config, server: Fastify(), logger: silentLogger });
  }

  const origin = (chat: { type: 'person' | 'group'; id: string; thread?: string }) =>
    inboundMessage({ platform: 'slack', channel: 'sl', chat, platform_message_id: `${chat.id}:1.000100` });

  describe('when the message is in an assistant thread (a thread of a direct message)', () => {
    it('sets the thread status with assistant.threads.setStatus', async () => {
      const adapter = channel();
      await adapter.typing?.(
        origin({ type: 'person', id: 'D0TYPE', thread: '1.000001' }),
        new AbortController().signal,
      );
      expect(fake.callsTo('assistant.threads.setStatus').map((call) => call.body)).toEqual([
        expect.objectContaining({ channel_id: 'D0TYPE', thread_ts: '1.000001', status: 'is typing...' }),
      ]);
    });
  });

  describe('when the message is in a channel or a direct message outside a thread', () => {
    it('calls nothing: Slack has no typing signal for apps there', async () => {
      const adapter = channel();
      const signal = new AbortController().signal;
      await adapter.typing?.(origin({ type: 'group', id: 'C0TYPE', thread: '1.000001' }), signal);
      await adapter.typing?.(origin({ type: 'person', id: 'D0TYPE' }), signal);
      expect(fake.calls).toEqual([]);
    });
  });
});
