import { describe, expect, it } from 'vitest';
import { normalizeFeishuEvent } from '../src/inbound/normalize.js';

const CONTEXT = {
  channelId: 'fs',
  botOpenId: 'ou_bot0000',
  messageId: '01JNORMALIZE0000000000000',
  receivedAt: 0,
};

function eventOf(message: Record<string, unknown>) {
  return {
    sender: { sender_id: { open_id: 'ou_user0001' }, sender_type: 'user' },
    message: {
      message_id: 'om_1',
      chat_id: 'oc_1',
      chat_type: 'p2p',
      message_type: 'text',
      content: JSON.stringify({ text: 'hello' }),
      ...message,
    },
  };
}

const mention = (key: string, index = 0) => ({ key, id: { open_id: `ou_user${index}` }, name: `u${index}` });

describe('normalizeFeishuEvent', () => {
  it('renders every mention placeholder as @name in one pass', () => {
    const message = normalizeFeishuEvent(
      eventOf({
        content: JSON.stringify({ text: '@_user_1 and @_user_2 and @_user_9' }),
        mentions: [mention('@_user_1', 1), mention('@_user_2', 2)],
      }),
      CONTEXT,
    );
    expect(message?.text).toBe('@u1 and @u2 and @_user_9');
  });

  it('refuses an empty mention key (SB_HTTP_BAD_REQUEST), at once', () => {
    const event = eventOf({
      content: JSON.stringify({ text: 'x'.repeat(100) }),
      mentions: Array.from({ length: 10 }, (_, index) => mention('', index)),
    });
    const started = performance.now();
    expect(() => normalizeFeishuEvent(event, CONTEXT)).toThrow(
      expect.objectContaining({ code: 'SB_HTTP_BAD_REQUEST', message: expect.stringContaining('key') }),
    );
    expect(performance.now() - started).toBeLessThan(100);
  });

  it('refuses more than 50 mentions (SB_HTTP_BAD_REQUEST)', () => {
    const mentions = Array.from({ length: 51 }, (_, index) => mention(`@_user_${index + 1}`, index));
    expect(() => normalizeFeishuEvent(eventOf({ mentions }), CONTEXT)).toThrow(
      expect.objectContaining({ code: 'SB_HTTP_BAD_REQUEST', message: expect.stringContaining('mentions') }),
    );
  });

  it.each([
    ['null', 'null'],
    ['an array', '[]'],
    ['not JSON', '{not json'],
  ])('refuses content that is %s (SB_HTTP_BAD_REQUEST naming content)', (_, content) => {
    expect(() => normalizeFeishuEvent(eventOf({ content }), CONTEXT)).toThrow(
      expect.objectContaining({ code: 'SB_HTTP_BAD_REQUEST', message: expect.stringContaining('content') }),
    );
  });

  it('reads a post whose runs are not all objects, skipping those', () => {
    const content = JSON.stringify({ title: 'T', content: [[null, { tag: 'text', text: 'line' }, 3], null] });
    const message = normalizeFeishuEvent(eventOf({ message_type: 'post', content }), CONTEXT);
    expect(message?.text).toBe('T\nline');
  });
});
