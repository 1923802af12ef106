import { describe, expect, it } from 'vitest';
import { type NormalizeContext, normalizeSlackEvent, renderSlackText } from '../../src/inbound/normalize.js';
import {
  BOT_USER_ID,
  appMention,
  botMessage,
  channelJoin,
  channelMessageWithMention,
  directMessage,
  fileShare,
  messageChanged,
  ownMessage,
  reactionAdded,
  threadReply,
} from '../fixtures.js';

const context: NormalizeContext = {
  channelId: 'sl',
  botUserId: BOT_USER_ID,
  botName: 'switchboard',
  messageId: '01J0000000000000000000TEST',
  receivedAt: 1_718_000_000_500,
};

describe('normalizeSlackEvent', () => {
  describe('when a person mentions the bot in a channel', () => {
    const message = normalizeSlackEvent(channelMessageWithMention, context);

    it('makes a group message that mentions the bot, with the message id <channel>:<ts>', () => {
      expect(message).toMatchObject({
        id: context.messageId,
        platform: 'slack',
        channel: 'sl',
        chat: { type: 'group', id: 'C0001' },
        sender: { id: 'U0001', is_bot: false },
        mentions_bot: true,
        platform_message_id: 'C0001:1718000000.000100',
        received_at: context.receivedAt,
        raw: channelMessageWithMention,
      });
      expect(message?.chat.thread).toBeUndefined();
    });

    it('renders mentions, channels, links and entities as plain text', () => {
      expect(message?.text).toBe('@switchboard what about @bob & #random? see the docs <3 @here');
    });

    it('lists each user mention as an element, flagging the bot', () => {
      expect(message?.elements).toEqual([
        { type: 'text', text: message?.text },
        { type: 'mention', user_id: 'UBOT', name: 'switchboard', is_bot_self: true },
        { type: 'mention', user_id: 'U0002', name: 'bob', is_bot_self: false },
      ]);
    });
  });

  describe('when the event is an app_mention', () => {
    it('normalizes to the same chat, text and message id as its message twin, mentioning the bot', () => {
      const mention = normalizeSlackEvent(appMention, context);
      const twin = normalizeSlackEvent(channelMessageWithMention, context);
      expect(mention).toMatchObject({ chat: twin?.chat, text: twin?.text, mentions_bot: true });
      expect(mention?.platform_message_id).toBe(twin?.platform_message_id);
    });
  });

  describe('when a person writes a direct message', () => {
    it('makes a person chat named after the profile display name, without a bot mention', () => {
      expect(normalizeSlackEvent(directMessage, context)).toMatchObject({
        chat: { type: 'person', id: 'D0001' },
        sender: { id: 'U0001', name: 'ann', is_bot: false },
        text: 'hello there',
        elements: [{ type: 'text', text: 'hello there' }],
        mentions_bot: false,
      });
    });
  });

  describe('when the message is a reply in a thread of a private channel', () => {
    it('keeps thread_ts as the chat thread of a group', () => {
      expect(normalizeSlackEvent(threadReply, context)?.chat).toEqual({
        type: 'group',
        id: 'G0001',
        thread: '1718000002.000300',
      });
    });
  });

  describe('when files are shared', () => {
    it('adds image, file and voice elements after the text', () => {
      expect(normalizeSlackEvent(fileShare, context)?.elements).toEqual([
        { type: 'text', text: 'two files' },
        { type: 'image', url: 'https://files.slack.com/files-pri/T0001-F0001/cat.png', file_id: 'F0001' },
        {
          type: 'file',
          url: 'https://files.slack.com/files-pri/T0001-F0002/report.pdf',
          file_id: 'F0002',
          name: 'report.pdf',
        },
        {
          type: 'voice',
          url: 'https://files.slack.com/files-pri/T0001-F0003/audio_message.webm',
          file_id: 'F0003',
        },
      ]);
    });
  });

  describe('when a bot wrote the message', () => {
    it('marks another bot as a bot sender, named by its username', () => {
      expect(normalizeSlackEvent(botMessage, context)?.sender).toEqual({
        id: 'B0009',
        name: 'CI',
        is_bot: true,
      });
    });

    it('marks the bot itself as a bot sender', () => {
      expect(normalizeSlackEvent(ownMessage, context)?.sender).toMatchObject({ id: 'UBOT', is_bot: true });
    });
  });

  describe('when a message is edited', () => {
    it('is an edited event with the new text, its own id, and the original as message_id', () => {
      expect(normalizeSlackEvent(messageChanged, context)).toMatchObject({
        chat: { type: 'group', id: 'C0001' },
        sender: { id: 'U0001', is_bot: false },
        text: 'edited',
        elements: [{ type: 'text', text: 'edited' }],
        platform_message_id: 'C0001:1718000000.000100:edit:1718000010.000000',
        event: { type: 'edited', message_id: 'C0001:1718000000.000100' },
        raw: messageChanged,
      });
    });

    it('returns null for a change that is no edit (a link unfurled)', () => {
      const { edited: _edited, ...unfurled } = messageChanged.message;
      expect(normalizeSlackEvent({ ...messageChanged, message: unfurled }, context)).toBeNull();
    });

    it('names a malformed changed message field by its path', () => {
      expect(() => normalizeSlackEvent({ ...messageChanged, message: { ts: 7 } }, context)).toThrow(
        'event.message.ts: expected a non-empty string',
      );
    });
  });

  describe("when the bot's own message changes, or the bot reacts", () => {
    it('returns null: a streamed answer edits its message with every preview', () => {
      const own = { ...messageChanged, message: { ...messageChanged.message, user: BOT_USER_ID } };
      expect(normalizeSlackEvent(own, context)).toBeNull();
      expect(normalizeSlackEvent({ ...reactionAdded, user: BOT_USER_ID }, context)).toBeNull();
    });
  });

  describe('when a message is deleted', () => {
    it("is a deleted event of the message's author, without text", () => {
      const deletion = {
        type: 'message',
        subtype: 'message_deleted',
        channel: 'C0001',
        ts: '1718000020.000100',
        deleted_ts: '1718000000.000100',
        previous_message: { type: 'message', user: 'U0001', text: 'oops', ts: '1718000000.000100' },
      };
      expect(normalizeSlackEvent(deletion, context)).toMatchObject({
        sender: { id: 'U0001' },
        text: '',
        elements: [],
        platform_message_id: 'C0001:1718000000.000100:deleted',
        event: { type: 'deleted', message_id: 'C0001:1718000000.000100' },
      });
    });
  });

  describe('when someone reacts to a message', () => {
    it('is a reaction event with the emoji name, keyed by who, what and when', () => {
      expect(normalizeSlackEvent(reactionAdded, context)).toMatchObject({
        chat: { type: 'group', id: 'C0001' },
        sender: { id: 'U0001', is_bot: false },
        text: '',
        platform_message_id: 'C0001:1718000000.000100:react:U0001:thumbsup:1718000012.001100',
        event: { type: 'reaction', message_id: 'C0001:1718000000.000100', emoji: 'thumbsup' },
      });
    });

    it('is a removed reaction event for reaction_removed', () => {
      const removed = { ...reactionAdded, type: 'reaction_removed', event_ts: '1718000013.000000' };
      expect(normalizeSlackEvent(removed, context)?.event).toEqual({
        type: 'reaction',
        message_id: 'C0001:1718000000.000100',
        emoji: 'thumbsup',
        removed: true,
      });
    });

    it('returns null for a reaction to a file', () => {
      expect(
        normalizeSlackEvent({ ...reactionAdded, item: { type: 'file', file: 'F1' } }, context),
      ).toBeNull();
    });
  });

  describe('when the event is not something a person said', () => {
    it.each([
      ['a channel join', channelJoin],
      ['an app home opened', { type: 'app_home_opened', user: 'U0001', channel: 'D0001' }],
    ])('returns null for %s', (_name, event) => {
      expect(normalizeSlackEvent(event, context)).toBeNull();
    });
  });

  describe('when a message event is malformed', () => {
    it('throws SB_HTTP_BAD_REQUEST naming the field', () => {
      expect(() =>
        normalizeSlackEvent({ type: 'message', text: 'hi', user: 'U1', ts: '1.2' }, context),
      ).toThrow(
        expect.objectContaining({
          code: 'SB_HTTP_BAD_REQUEST',
          message: 'event.channel: expected a non-empty string',
        }),
      );
      expect(() => normalizeSlackEvent({ ...directMessage, text: 42 }, context)).toThrow(
        'event.text: expected a string',
      );
      expect(() => normalizeSlackEvent('nope', context)).toThrow('event: expected an object');
    });
  });
});

describe('renderSlackText', () => {
  describe('when mentions carry no label', () => {
    it('renders other users as @<id> and the bot as @<id> when its name is unknown', () => {
      const { text, mentions } = renderSlackText('<@U0002> and <@UBOT>', { botUserId: 'UBOT' });
      expect(text).toBe('@U0002 and @UBOT');
      expect(mentions.map((mention) => mention.is_bot_self)).toEqual([false, true]);
    });
  });

  describe('when a link has no label', () => {
    it('renders the URL', () => {
      expect(renderSlackText('go to <https://example.com>', { botUserId: 'UBOT' }).text).toBe(
        'go to https://example.com',
      );
    });
  });
});
