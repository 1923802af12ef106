import type { InboundMessage } from '@switchboard/core';
import { inboundMessage } from '@switchboard/testkit/inbound-message';
import { describe, expect, it } from 'vitest';
import { renderReplies } from '../src/outbound/render.js';

function origin(chat: InboundMessage['chat'], platformMessageId: string): InboundMessage {
  return inboundMessage({ chat, platform_message_id: platformMessageId });
}

describe('renderReplies', () => {
  describe('when replying in a private chat', () => {
    it('sends to the chat id as a number and answers the origin message first', () => {
      expect(
        renderReplies(origin({ type: 'person', id: '111222333' }, '111222333:42'), [
          { text: 'one' },
          { text: 'two' },
        ]),
      ).toEqual([
        {
          chat_id: 111_222_333,
          text: 'one',
          reply_parameters: { message_id: 42, allow_sending_without_reply: true },
        },
        { chat_id: 111_222_333, text: 'two' },
      ]);
    });
  });

  describe('when replying to an event', () => {
    it('answers the message the event is about, not the event', () => {
      const edit = inboundMessage({
        chat: { type: 'person', id: '111222333' },
        platform_message_id: '111222333:42:edit:1735000100',
        event: { type: 'edited', message_id: '111222333:42' },
      });
      expect(renderReplies(edit, [{ text: 'noted' }])[0]?.reply_parameters).toEqual({
        message_id: 42,
        allow_sending_without_reply: true,
      });
    });
  });

  describe('when replying in a forum topic', () => {
    it('sends every message into the topic', () => {
      const messages = renderReplies(
        origin({ type: 'group', id: '-1001234567890', thread: '500' }, '-1001234567890:501'),
        [{ text: 'a' }, { text: 'b' }],
      );
      expect(messages.map((message) => message.message_thread_id)).toEqual([500, 500]);
      expect(messages[0]?.chat_id).toBe(-1_001_234_567_890);
    });
  });

  describe('when a reply is long or empty', () => {
    it('splits the long one in order and skips the empty one', () => {
      const long = `${'a'.repeat(4000)}\n${'b'.repeat(1000)}`;
      const messages = renderReplies(origin({ type: 'person', id: '1' }, '1:2'), [
        { text: ' ' },
        { text: long },
      ]);
      expect(messages.map((message) => ('text' in message ? message.text : undefined))).toEqual([
        'a'.repeat(4000),
        'b'.repeat(1000),
      ]);
      expect(messages[0]?.reply_parameters?.message_id).toBe(2);
      expect(messages[1]?.reply_parameters).toBeUndefined();
    });
  });

  describe('when a reply carries attachments', () => {
    it('renders its attachments as listed, then its text, the first one answering the origin', () => {
      const image = { type: 'image' as const, data: 'iVBORw0KGgo=' };
      const file = { type: 'file' as const, url: 'https://example.com/report.pdf' };
      const parts = renderReplies(origin({ type: 'person', id: '1' }, '1:2'), [
        { text: 'see these', attachments: [image, file] },
        { attachments: [{ type: 'audio', url: 'https://example.com/a.mp3' }] },
      ]);
      expect(parts.map((part) => ('text' in part ? part.text : part.attachment.type))).toEqual([
        'image',
        'file',
        'see these',
        'audio',
      ]);
      expect(parts[0]).toMatchObject({ chat_id: 1, attachment: image, reply_parameters: { message_id: 2 } });
      expect(parts.slice(1).every((part) => part.reply_parameters === undefined)).toBe(true);
    });
  });
});
