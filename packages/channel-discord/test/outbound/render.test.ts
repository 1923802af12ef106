import type { InboundMessage } from '@switchboard/core';
import { inboundMessage } from '@switchboard/testkit/inbound-message';
import { describe, expect, it } from 'vitest';
import { renderReplies } from '../../src/outbound/render.js';

function origin(chat: InboundMessage['chat']): InboundMessage {
  return inboundMessage({
    platform: 'discord',
    channel: 'dc',
    chat,
    platform_message_id: '1250000000000000001',
  });
}

describe('renderReplies', () => {
  describe('when the origin is in a channel', () => {
    it('posts each reply to that channel as a reply to the origin, pinging users only', () => {
      const rendered = renderReplies(origin({ type: 'group', id: '600' }), [
        { text: 'one' },
        { text: 'two' },
      ]);
      expect(rendered).toEqual(
        ['one', 'two'].map((content) => ({
          channelId: '600',
          body: {
            content,
            message_reference: { message_id: '1250000000000000001', fail_if_not_exists: false },
            allowed_mentions: { parse: ['users'], replied_user: true },
          },
        })),
      );
    });
  });

  describe('when the origin is an event', () => {
    it('replies to the message the event is about, not to the event', () => {
      const edit = inboundMessage({
        platform: 'discord',
        chat: { type: 'group', id: '600' },
        platform_message_id: '1250000000000000001:edit:1700000060000',
        event: { type: 'edited', message_id: '1250000000000000001' },
      });
      expect(renderReplies(edit, [{ text: 'noted' }])[0]?.body.message_reference?.message_id).toBe(
        '1250000000000000001',
      );
    });
  });

  describe('when the origin is in a thread', () => {
    it('posts to the thread', () => {
      const [message] = renderReplies(origin({ type: 'group', id: '600', thread: '700' }), [
        { text: 'in thread' },
      ]);
      expect(message?.channelId).toBe('700');
    });
  });

  describe('when a reply is longer than 2000 characters', () => {
    it('splits it and makes only the first part a reply', () => {
      const rendered = renderReplies(origin({ type: 'person', id: '900' }), [{ text: 'a'.repeat(4500) }]);
      expect(rendered.map((message) => message.body.content.length)).toEqual([2000, 2000, 500]);
      expect(rendered.map((message) => message.body.message_reference !== undefined)).toEqual([
        true,
        false,
        false,
      ]);
    });
  });

  describe('when a reply is empty', () => {
    it('sends nothing for it', () => {
      expect(renderReplies(origin({ type: 'person', id: '900' }), [{ text: '' }, { text: '  \n' }])).toEqual(
        [],
      );
    });
  });
});
