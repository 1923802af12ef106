import { describe, expect, it } from 'vitest';
import { normalizeLineEvent } from '../../src/inbound/normalize.js';

// Events in the shapes LINE sends them (webhook event objects of the Messaging API reference).
const USER = 'U4af4980629000000000000000000000a';
const BOT = 'U0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b';
const CONTEXT = {
  channelId: 'ln',
  botUserId: BOT,
  messageId: '01J0000000000000000000000A',
  receivedAt: 1_718_000_000_000,
  maxMediaBytes: 25_000_000,
};

function textEvent(fields: Record<string, unknown> = {}, message: Record<string, unknown> = {}) {
  return {
    type: 'message',
    message: {
      type: 'text',
      id: '444573844083572737',
      quoteToken: 'q3Plxr4AgKd',
      text: 'Hello, world',
      ...message,
    },
    webhookEventId: '01FZ74A0TDDPYRVKNK77XKC3ZR',
    deliveryContext: { isRedelivery: false },
    timestamp: 1_718_000_000_000,
    source: { type: 'user', userId: USER },
    replyToken: '757913772c4646b784d4b7ce46d12671',
    mode: 'active',
    ...fields,
  };
}

describe('normalizeLineEvent', () => {
  describe('when a user sends text in a one-to-one chat', () => {
    it('makes a person message keyed by the user, with the message id and the event as raw', () => {
      const event = textEvent();
      expect(normalizeLineEvent(event, CONTEXT)).toEqual({
        id: CONTEXT.messageId,
        platform: 'line',
        channel: 'ln',
        chat: { type: 'person', id: USER },
        sender: { id: USER, is_bot: false },
        elements: [{ type: 'text', text: 'Hello, world' }],
        text: 'Hello, world',
        mentions_bot: false,
        platform_message_id: '444573844083572737',
        received_at: CONTEXT.receivedAt,
        raw: event,
      });
    });
  });

  describe("when the message comes from the bot's own user id (the body's destination)", () => {
    it('marks the sender as the bot, which admission ignores', () => {
      const source = { type: 'group', groupId: 'C1', userId: BOT };
      expect(normalizeLineEvent(textEvent({ source }), CONTEXT)?.sender).toEqual({ id: BOT, is_bot: true });
    });
  });

  describe('when the message is in a group or a room', () => {
    it.each([
      [
        'group',
        { type: 'group', groupId: 'Ca56f94637c0000000000000000000000', userId: USER },
        'Ca56f94637c0000000000000000000000',
      ],
      [
        'room',
        { type: 'room', roomId: 'Ra8dc148930000000000000000000000b', userId: USER },
        'Ra8dc148930000000000000000000000b',
      ],
    ])('makes a %s message keyed by its id', (_kind, source, chatId) => {
      const message = normalizeLineEvent(textEvent({ source }), CONTEXT);
      expect(message).toMatchObject({ chat: { type: 'group', id: chatId }, sender: { id: USER } });
    });

    it('marks the bot addressed when a mentionee isSelf, and keeps every mention', () => {
      const mention = {
        mentionees: [
          { index: 0, length: 12, type: 'user', userId: BOT, isSelf: true },
          { index: 13, length: 4, type: 'user', userId: USER, isSelf: false },
          { index: 18, length: 4, type: 'all' },
          { index: 23, length: 4, type: 'user', isSelf: false },
        ],
      };
      const source = { type: 'group', groupId: 'C1', userId: USER };
      const message = normalizeLineEvent(
        textEvent({ source }, { text: '@Switchboard @ann @All @bob', mention }),
        CONTEXT,
      );
      expect(message?.mentions_bot).toBe(true);
      expect(message?.elements.filter((element) => element.type === 'mention')).toEqual([
        { type: 'mention', user_id: BOT, is_bot_self: true },
        { type: 'mention', user_id: USER, is_bot_self: false },
        { type: 'mention', user_id: 'all', is_bot_self: false },
      ]);
    });

    it('leaves the bot unaddressed without a mention of it', () => {
      const source = { type: 'group', groupId: 'C1', userId: USER };
      expect(normalizeLineEvent(textEvent({ source }), CONTEXT)?.mentions_bot).toBe(false);
    });
  });

  describe('when the message quotes another or carries media', () => {
    it('adds a quote element', () => {
      const message = normalizeLineEvent(textEvent({}, { quotedMessageId: '468789577898262530' }), CONTEXT);
      expect(message?.elements).toContainEqual({ type: 'quote', message_id: '468789577898262530' });
    });

    it.each([
      [
        { type: 'image', id: '1' },
        { type: 'image', file_id: '1' },
      ],
      [
        { type: 'audio', id: '2', duration: 60000 },
        { type: 'voice', file_id: '2' },
      ],
      [
        { type: 'file', id: '3', fileName: 'report.pdf', fileSize: 2138 },
        { type: 'file', file_id: '3', name: 'report.pdf', size: 2138 },
      ],
      [
        { type: 'video', id: '4', duration: 60000 },
        { type: 'video', file_id: '4' },
      ],
      [
        { type: 'file', id: '5', fileName: 'huge.zip', fileSize: 90_000_000 },
        { type: 'file', file_id: '5', name: 'huge.zip', size: 90_000_000, too_large: true },
      ],
    ])('makes %o an element with no text', (content, element) => {
      const message = normalizeLineEvent(
        textEvent({}, { text: undefined, quoteToken: undefined, ...content }),
        CONTEXT,
      );
      expect(message?.text).toBe('');
      expect(message?.elements).toEqual([element]);
    });
  });

  describe('when the event is nothing to answer', () => {
    it.each([
      ['a follow event', { type: 'follow', message: undefined }],
      ['an unsend event', { type: 'unsend', unsend: { messageId: '1' }, message: undefined }],
      ['a message in standby mode', { mode: 'standby' }],
    ])('returns null for %s', (_case, fields) => {
      expect(normalizeLineEvent(textEvent(fields), CONTEXT)).toBeNull();
    });

    it('returns null for a sticker', () => {
      const sticker = { type: 'sticker', id: '5', packageId: '446', stickerId: '1988' };
      expect(normalizeLineEvent(textEvent({}, sticker), CONTEXT)).toBeNull();
    });
  });

  describe('when the event is malformed', () => {
    it.each([
      ['a user source without userId', { source: { type: 'user' } }, 'source.userId'],
      ['no webhookEventId', { webhookEventId: undefined }, 'webhookEventId'],
      ['an unknown source type', { source: { type: 'square', squareId: 'S1' } }, 'source.type'],
    ])('throws SB_HTTP_BAD_REQUEST naming the field for %s', (_case, fields, path) => {
      expect(() => normalizeLineEvent(textEvent(fields), CONTEXT)).toThrow(
        expect.objectContaining({ code: 'SB_HTTP_BAD_REQUEST', message: expect.stringContaining(path) }),
      );
    });
  });
});
