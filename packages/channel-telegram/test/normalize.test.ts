import type { InboundMessage } from '@switchboard/core';
import type { Update } from 'grammy/types';
import { describe, expect, it } from 'vitest';
import { type NormalizeResult, normalizeUpdate } from '../src/inbound/normalize.js';
import * as fixtures from './fixtures.js';

const context = {
  channelId: 'tg',
  bot: fixtures.BOT,
  id: '01JTESTMESSAGE0000000000001',
  receivedAt: 1_735_000_100_000,
  maxMediaBytes: 25_000_000,
};

function normalized(update: Update): InboundMessage {
  const result: NormalizeResult = normalizeUpdate(update, context);
  if (!('message' in result)) throw new Error(`expected a message, got unsupported: ${result.unsupported}`);
  return result.message;
}

describe('normalizeUpdate', () => {
  describe('when a private text message arrives', () => {
    it('maps it to a person chat with ids, sender and text, keeping the update as raw', () => {
      const message = normalized(fixtures.privateText);
      expect(message).toEqual({
        id: context.id,
        platform: 'telegram',
        channel: 'tg',
        chat: { type: 'person', id: '111222333' },
        sender: { id: '111222333', name: 'Alice Liddell', is_bot: false },
        elements: [{ type: 'text', text: 'hello there' }],
        text: 'hello there',
        mentions_bot: false,
        platform_message_id: '111222333:42',
        received_at: context.receivedAt,
        raw: fixtures.privateText,
      });
    });
  });

  describe('when a group message @mentions the bot', () => {
    it('is a group message with a mention element of the bot between the text parts', () => {
      const message = normalized(fixtures.groupMention);
      expect(message.chat).toEqual({ type: 'group', id: '-4012345678' });
      expect(message.mentions_bot).toBe(true);
      expect(message.elements).toEqual([
        { type: 'text', text: 'hi ' },
        { type: 'mention', user_id: '7000000001', name: 'SwitchboardBot', is_bot_self: true },
        { type: 'text', text: ', what time is it?' },
      ]);
      expect(message.text).toBe('hi @SwitchboardBot, what time is it?');
      expect(message.platform_message_id).toBe('-4012345678:77');
    });
  });

  describe('when a group message mentions someone else or no one', () => {
    it('keeps the mention without addressing the bot', () => {
      const message = normalized(fixtures.groupMentionOfSomeoneElse);
      expect(message.mentions_bot).toBe(false);
      expect(message.elements).toContainEqual({
        type: 'mention',
        user_id: 'hatter',
        name: 'hatter',
        is_bot_self: false,
      });
    });

    it('does not address the bot with plain text', () => {
      expect(normalized(fixtures.groupPlain).mentions_bot).toBe(false);
    });
  });

  describe('when a message is a command', () => {
    it('makes /cmd@bot a command element addressed to the bot, with the rest as args', () => {
      const message = normalized(fixtures.groupCommandForBot);
      expect(message.elements).toEqual([
        { type: 'command', name: 'ask', args: 'why is a raven like a desk?' },
      ]);
      expect(message.mentions_bot).toBe(true);
    });

    it('does not address the bot with a command for another bot', () => {
      const message = normalized(fixtures.groupCommandForOtherBot);
      expect(message.elements).toEqual([{ type: 'command', name: 'start', args: '' }]);
      expect(message.mentions_bot).toBe(false);
    });

    it('addresses the bot with a bare /cmd in a private chat', () => {
      const message = normalized(fixtures.privateCommand);
      expect(message.elements).toEqual([{ type: 'command', name: 'start', args: '' }]);
      expect(message.mentions_bot).toBe(true);
    });
  });

  describe('when a group message replies to the bot', () => {
    it('addresses the bot and quotes the replied message', () => {
      const message = normalized(fixtures.groupReplyToBot);
      expect(message.mentions_bot).toBe(true);
      expect(message.elements[0]).toEqual({
        type: 'quote',
        message_id: '-4012345678:70',
        text: 'Once upon a time',
      });
    });
  });

  describe('when a message is in a forum topic', () => {
    it('sets the thread and ignores the implicit link to the topic start', () => {
      const message = normalized(fixtures.forumTopicMessage);
      expect(message.chat).toEqual({ type: 'group', id: '-1001234567890', thread: '500' });
      expect(message.elements.some((element) => element.type === 'quote')).toBe(false);
      expect(message.mentions_bot).toBe(true);
    });
  });

  describe('when a message carries media', () => {
    it('maps the largest photo size to an image and reads the caption and its entities', () => {
      const message = normalized(fixtures.photoWithCaption);
      expect(message.elements).toEqual([
        { type: 'image', file_id: 'AgACAgQAAxkBAAIBlarge', mime_type: 'image/jpeg', size: 81_234 },
        { type: 'text', text: 'look ' },
        { type: 'mention', user_id: '7000000001', name: 'SwitchboardBot', is_bot_self: true },
      ]);
      expect(message.text).toBe('look @SwitchboardBot');
    });

    it('maps a voice note to a voice element with empty text', () => {
      const message = normalized(fixtures.voiceNote);
      expect(message.elements).toEqual([
        { type: 'voice', file_id: 'AwACAgQAAxkBAAIBvoice', mime_type: 'audio/ogg', size: 9_876 },
      ]);
      expect(message.text).toBe('');
    });

    it('maps a document to a file element with its name, type and size', () => {
      expect(normalized(fixtures.documentMessage).elements).toEqual([
        {
          type: 'file',
          file_id: 'BQACAgQAAxkBAAIBdoc',
          name: 'report.pdf',
          mime_type: 'application/pdf',
          size: 55_555,
        },
      ]);
    });

    it('maps an audio file to an audio element', () => {
      expect(normalized(fixtures.audioMessage).elements).toEqual([
        {
          type: 'audio',
          file_id: 'CQACAgQAAxkBAAIBaudio',
          name: 'song.mp3',
          mime_type: 'audio/mpeg',
          size: 4_000_000,
        },
      ]);
    });

    it('marks a video larger than media.max_bytes as too large', () => {
      expect(normalized(fixtures.videoMessage).elements).toEqual([
        {
          type: 'video',
          file_id: 'BAACAgQAAxkBAAIBvideo',
          mime_type: 'video/mp4',
          size: 30_000_000,
          too_large: true,
        },
      ]);
    });
  });

  describe('when the sender is a bot or an anonymous admin', () => {
    it('marks bot authors as bots', () => {
      expect(normalized(fixtures.fromOtherBot).sender).toEqual({
        id: '5555555',
        name: 'Other',
        is_bot: true,
      });
    });

    it('takes the sender chat for anonymous admins instead of the placeholder bot', () => {
      expect(normalized(fixtures.anonymousAdmin).sender).toEqual({
        id: '-1001234567890',
        name: 'Wonderland',
        is_bot: false,
      });
    });
  });

  describe('when a message is edited', () => {
    it('is an edited event with the new text, its own id, and the original as message_id', () => {
      const message = normalized(fixtures.editedMessage);
      expect(message.event).toEqual({ type: 'edited', message_id: '111222333:42' });
      expect(message.text).toBe('hello there!');
      expect(message.elements).toEqual([{ type: 'text', text: 'hello there!' }]);
      expect(message.platform_message_id).toBe('111222333:42:edit:912345691');
    });

    it('tells two edits within one second apart, and a redelivered edit from the first', () => {
      const again = { ...fixtures.editedMessage, update_id: fixtures.editedMessage.update_id + 1 };
      const first = normalized(fixtures.editedMessage).platform_message_id;
      expect(normalized(again).platform_message_id).not.toBe(first);
      expect(normalized(fixtures.editedMessage).platform_message_id).toBe(first);
    });
  });

  describe('when someone reacts to a message', () => {
    it('is a reaction event with the emoji added', () => {
      const message = normalized(fixtures.reactionAdded);
      expect(message).toMatchObject({
        chat: { type: 'group', id: '-4012345678' },
        sender: { id: '111222333', name: 'Alice Liddell', is_bot: false },
        text: '',
        elements: [],
        event: { type: 'reaction', message_id: '-4012345678:77', emoji: '👍' },
        platform_message_id: '-4012345678:77:reaction:912345695',
      });
      expect(message.event?.removed).toBeUndefined();
    });

    it('gives two reaction changes within one second ids of their own', () => {
      const removedAtOnce = {
        ...fixtures.reactionRemoved,
        message_reaction: { ...fixtures.reactionRemoved.message_reaction!, date: 1_735_000_200 },
      };
      expect(normalized(removedAtOnce).platform_message_id).not.toBe(
        normalized(fixtures.reactionAdded).platform_message_id,
      );
    });

    it('is a removed reaction event when the emoji was taken away', () => {
      expect(normalized(fixtures.reactionRemoved).event).toEqual({
        type: 'reaction',
        message_id: '-4012345678:77',
        emoji: '👍',
        removed: true,
      });
    });
  });

  describe('when the update is not a message the gateway handles', () => {
    it.each([
      ['a member change', fixtures.myChatMember, 'my_chat_member'],
      ['a join service message', fixtures.newMembers, 'message without text or media'],
      ['a sticker', fixtures.sticker, 'message without text or media'],
      ['a channel post', { update_id: 1, channel_post: {} } as unknown as Update, 'channel_post'],
    ])('reports %s as unsupported', (_name, update, kind) => {
      expect(normalizeUpdate(update, context)).toEqual({ unsupported: kind });
    });
  });
});
