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

  it('replaces a placeholder only where it ends: @_allison and @_user_12345 stay as written', () => {
    const message = normalizeFeishuEvent(
      eventOf({
        content: JSON.stringify({ text: '@_all @_allison @_user_12345 @_user_1' }),
        mentions: [{ key: '@_all', id: { open_id: '' }, name: 'all' }, mention('@_user_1', 1)],
      }),
      CONTEXT,
    );
    expect(message?.text).toBe('@all @_allison @_user_12345 @u1');
  });

  it('reads @_all as a mention of everyone (user_id all)', () => {
    const message = normalizeFeishuEvent(
      eventOf({
        content: JSON.stringify({ text: '@_all hello' }),
        mentions: [{ key: '@_all', id: { open_id: '' }, name: 'all' }],
      }),
      CONTEXT,
    );
    expect(message?.text).toBe('@all hello');
    expect(message?.elements).toContainEqual({
      type: 'mention',
      user_id: 'all',
      name: 'all',
      is_bot_self: false,
    });
    expect(message?.mentions_bot).toBe(false);
  });

  it('skips a mention with an empty open_id, a key not a placeholder, or no object, keeping the others', () => {
    const message = normalizeFeishuEvent(
      eventOf({
        content: JSON.stringify({ text: '@_user_1 @_user_2 hi' }),
        mentions: [
          { key: '@_user_1', id: { open_id: '' }, name: 'empty' },
          mention('', 3),
          null,
          mention('@_user_2', 2),
        ],
      }),
      CONTEXT,
    );
    expect(message?.text).toBe('@_user_1 @u2 hi');
    expect(message?.elements.filter((element) => element.type === 'mention')).toEqual([
      { type: 'mention', user_id: 'ou_user2', name: 'u2', is_bot_self: false },
    ]);
  });

  it('reads the first 50 of more mentions, at once', () => {
    const mentions = Array.from({ length: 10_000 }, (_, index) => mention(`@_user_${index + 1}`, index));
    const started = performance.now();
    const message = normalizeFeishuEvent(eventOf({ mentions }), CONTEXT);
    expect(performance.now() - started).toBeLessThan(200);
    expect(message?.elements.filter((element) => element.type === 'mention')).toHaveLength(50);
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

  it.each([
    ['image', { image_key: 'img_v3_1' }, { type: 'image', file_id: 'img_v3_1' }],
    ['audio', { file_key: 'file_v3_1', duration: 2000 }, { type: 'voice', file_id: 'file_v3_1' }],
    [
      'file',
      { file_key: 'file_v3_2', file_name: 'a.pdf' },
      { type: 'file', file_id: 'file_v3_2', name: 'a.pdf' },
    ],
    [
      'media',
      { file_key: 'file_v3_3', image_key: 'img_v3_3', file_name: 'clip.mp4', duration: 2000 },
      { type: 'video', file_id: 'file_v3_3', name: 'clip.mp4' },
    ],
  ])('reads a %s message as a media element keyed by its file key', (type, content, element) => {
    const message = normalizeFeishuEvent(
      eventOf({ message_type: type, content: JSON.stringify(content) }),
      CONTEXT,
    );
    expect(message?.elements).toEqual([element]);
    expect(message?.platform_message_id).toBe('om_1');
  });
});
