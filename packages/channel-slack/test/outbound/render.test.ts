import type { InboundMessage } from '@switchboard/core';
import { inboundMessage } from '@switchboard/testkit/inbound-message';
import { describe, expect, it } from 'vitest';
import { MAX_CHUNK_CHARS, type SlackPart, renderSlackReplies } from '../../src/outbound/render.js';

function origin(chat: InboundMessage['chat']): InboundMessage {
  return inboundMessage({
    platform: 'slack',
    channel: 'sl',
    chat,
    platform_message_id: `${chat.id}:1718000000.000100`,
  });
}

describe('renderSlackReplies', () => {
  describe('when the origin was in a thread', () => {
    it('posts every reply in that thread of the origin channel', () => {
      expect(
        renderSlackReplies(origin({ type: 'group', id: 'C0001', thread: '1717.0001' }), [
          { text: 'a' },
          { text: 'b' },
        ]),
      ).toEqual([
        { channel: 'C0001', text: 'a', thread_ts: '1717.0001' },
        { channel: 'C0001', text: 'b', thread_ts: '1717.0001' },
      ]);
    });
  });

  describe('when the origin was not in a thread', () => {
    it('posts in the channel itself', () => {
      expect(renderSlackReplies(origin({ type: 'person', id: 'D0001' }), [{ text: 'a' }])).toEqual([
        { channel: 'D0001', text: 'a' },
      ]);
    });
  });

  describe('when a reply contains Slack control characters', () => {
    it('escapes &, < and > so the text stays literal', () => {
      expect(
        textsOf(renderSlackReplies(origin({ type: 'person', id: 'D1' }), [{ text: 'a < b && <@U1>' }]))[0],
      ).toBe('a &lt; b &amp;&amp; &lt;@U1&gt;');
    });
  });

  describe('when a reply is empty or longer than a chunk', () => {
    it('skips the empty one and splits the long one at a newline, keeping all text but the newline', () => {
      const long = `${'x'.repeat(MAX_CHUNK_CHARS - 100)}\n${'y'.repeat(500)}`;
      const messages = renderSlackReplies(origin({ type: 'person', id: 'D1' }), [
        { text: '  ' },
        { text: long },
      ]);
      expect(textsOf(messages).map((text) => text.length)).toEqual([MAX_CHUNK_CHARS - 100, 500]);
      expect(textsOf(messages).join('\n')).toBe(long);
    });
  });

  describe('when a reply carries files', () => {
    it('gives its files as listed, then its text, all in the origin thread', () => {
      const image = { type: 'image' as const, data: 'AAAA' };
      const parts = renderSlackReplies(origin({ type: 'group', id: 'C1', thread: '1.2' }), [
        { text: 'look', attachments: [image] },
      ]);
      expect(parts).toEqual([
        { channel: 'C1', attachment: image, thread_ts: '1.2' },
        { channel: 'C1', text: 'look', thread_ts: '1.2' },
      ]);
    });
  });
});

function textsOf(parts: SlackPart[]): string[] {
  return parts.flatMap((part) => ('text' in part ? [part.text] : []));
}
