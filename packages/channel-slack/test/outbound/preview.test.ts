import { type ChannelAdapter, silentLogger } from '@switchboard/core';
import { inboundMessage } from '@switchboard/testkit/inbound-message';
import { type FakeSlack, startFakeSlack } from '@switchboard/testkit/slack';
import Fastify from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SlackChannelSchema } from '../../src/options.js';
import { createSlackChannel } from '../../src/index.js';

const origin = inboundMessage({
  platform: 'slack',
  channel: 'sl',
  chat: { type: 'group', id: 'C0PREVIEW', thread: '1718000000.000100' },
  platform_message_id: 'C0PREVIEW:1718000000.000100',
});

describe('slack channel previews (against the fake Web API)', () => {
  let fake: FakeSlack;
  beforeEach(async () => {
    fake = await startFakeSlack();
  });
  afterEach(() => fake.close());

  function channel(): ChannelAdapter {
    const config = SlackChannelSchema.parse({
      id: 'sl',
      type: 'slack',
      bot_token: 'xoxb-test',
      signing_secret: 'secret',
      bot_user_id: 'UBOT',
      api_url: fake.apiUrl,
    });
    return createSlackChannel({ config, server: Fastify(), logger: silentLogger });
  }

  describe('when an answer is previewed, then sent with the preview as draft', () => {
    it('posts once in the thread, updates that message, and updates it into the final text', async () => {
      const sl = channel();
      const signal = new AbortController().signal;
      const draft = await sl.preview?.(origin, 'a <b>', undefined, signal);
      if (draft === undefined) throw new Error('the Slack channel shows previews');
      expect(await sl.preview?.(origin, 'a <b> c', draft, signal)).toBe(draft);
      await sl.send(origin, [{ text: 'a <b> c d' }, { text: 'PS' }], signal, { draft });

      expect(fake.callsTo('chat.postMessage').map((call) => call.body)).toEqual([
        expect.objectContaining({
          channel: 'C0PREVIEW',
          thread_ts: '1718000000.000100',
          text: 'a &lt;b&gt;',
        }),
        expect.objectContaining({ channel: 'C0PREVIEW', text: 'PS' }),
      ]);
      expect(fake.edits().map((edit) => edit.text)).toEqual(['a &lt;b&gt; c', 'a &lt;b&gt; c d']);
      expect(fake.textOf('C0PREVIEW', draft)).toBe('a &lt;b&gt; c d');
    });
  });
});
