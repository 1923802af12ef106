import { describe, expect, it } from 'vitest';
import {
  normalizeDeletion,
  normalizeEdit,
  normalizeMessage,
  normalizeReaction,
} from '../../src/inbound/normalize.js';
import {
  BOT_USER_ID,
  directMessage,
  guildMention,
  replyWithAttachments,
  threadMessage,
  voiceMessage,
} from './fixtures.js';

const context = {
  id: '01JABCDEFGHJKMNPQRSTVWXYZ0',
  channelId: 'dc',
  botUserId: BOT_USER_ID,
  receivedAt: 1_700_000_000_000,
};

describe('normalizeMessage', () => {
  describe('when the message is a DM', () => {
    it('is a person chat keyed by the DM channel, with the message id as platform id', () => {
      const message = normalizeMessage(directMessage, context);
      expect(message).toEqual({
        id: context.id,
        platform: 'discord',
        channel: 'dc',
        chat: { type: 'person', id: '1240000000000000009' },
        sender: { id: '234567890123456789', name: 'Alice A.', is_bot: false },
        elements: [{ type: 'text', text: 'hello there' }],
        text: 'hello there',
        mentions_bot: false,
        platform_message_id: '1250000000000000001',
        received_at: context.receivedAt,
        raw: directMessage,
      });
    });
  });

  describe('when a guild message mentions the bot and another user', () => {
    it('is a group chat that mentions the bot, with @names in the text and one mention element each', () => {
      const message = normalizeMessage(guildMention, context);
      expect(message?.chat).toEqual({ type: 'group', id: '1230000000000000100' });
      expect(message?.text).toBe("@switchboard what's up @bob");
      expect(message?.mentions_bot).toBe(true);
      expect(message?.elements).toEqual([
        { type: 'text', text: "@switchboard what's up @bob" },
        { type: 'mention', user_id: BOT_USER_ID, name: 'switchboard', is_bot_self: true },
        { type: 'mention', user_id: '345678901234567890', name: 'bob', is_bot_self: false },
      ]);
    });
  });

  describe('when a guild message mentions only other users', () => {
    it('does not mention the bot', () => {
      const others = {
        ...guildMention,
        mentions: guildMention.mentions.filter((user) => user.id !== BOT_USER_ID),
      };
      expect(normalizeMessage(others, context)?.mentions_bot).toBe(false);
    });
  });

  describe('when the message is in a thread', () => {
    it('keeps the parent channel as chat and the thread as chat.thread', () => {
      expect(normalizeMessage(threadMessage, context)?.chat).toEqual({
        type: 'group',
        id: '1230000000000000100',
        thread: '1260000000000000777',
      });
    });
  });

  describe('when the message replies to the bot and carries attachments', () => {
    it('quotes the replied message, counts as addressed to the bot, and maps images and files', () => {
      const message = normalizeMessage(replyWithAttachments, context);
      expect(message?.mentions_bot).toBe(true);
      expect(message?.elements).toEqual([
        { type: 'quote', message_id: '1250000000000000000', text: 'earlier answer' },
        { type: 'text', text: 'see attached' },
        {
          type: 'image',
          url: 'https://cdn.discordapp.com/attachments/1/2/cat.png',
          file_id: '1270000000000000001',
        },
        {
          type: 'file',
          url: 'https://cdn.discordapp.com/attachments/1/3/report.pdf',
          file_id: '1270000000000000002',
          name: 'report.pdf',
        },
      ]);
    });
  });

  describe('when the message replies to someone else', () => {
    it('quotes it without addressing the bot', () => {
      const reply = {
        ...replyWithAttachments,
        reference: { messageId: '9', authorId: '234567890123456789', content: null },
      };
      const message = normalizeMessage(reply, context);
      expect(message?.mentions_bot).toBe(false);
      expect(message?.elements[0]).toEqual({ type: 'quote', message_id: '9' });
    });
  });

  describe('when the message is a voice message', () => {
    it('has a voice element and empty text', () => {
      const message = normalizeMessage(voiceMessage, context);
      expect(message?.text).toBe('');
      expect(message?.elements).toEqual([
        {
          type: 'voice',
          url: 'https://cdn.discordapp.com/attachments/1/4/voice-message.ogg',
          file_id: '1270000000000000003',
        },
      ]);
    });
  });

  describe('when the author is a bot or a webhook', () => {
    it('marks the sender as a bot', () => {
      const fromBot = { ...directMessage, author: { ...directMessage.author, bot: true } };
      const fromWebhook = { ...directMessage, webhookId: '1280000000000000001' };
      expect(normalizeMessage(fromBot, context)?.sender.is_bot).toBe(true);
      expect(normalizeMessage(fromWebhook, context)?.sender.is_bot).toBe(true);
    });
  });

  describe('when the user has no display name', () => {
    it('names the sender by username', () => {
      const plain = { ...directMessage, author: { ...directMessage.author, globalName: null } };
      expect(normalizeMessage(plain, context)?.sender.name).toBe('alice');
    });
  });

  describe('when the message is not conversation (a member join, a pin)', () => {
    it('returns null', () => {
      expect(normalizeMessage({ ...guildMention, type: 7 }, context)).toBeNull();
      expect(normalizeMessage({ ...guildMention, type: 6 }, context)).toBeNull();
    });
  });
});

describe('normalizeEdit', () => {
  describe('when a message is edited', () => {
    it('is an edited event with the new text, keyed by the message id and the edit time', () => {
      const edited = normalizeEdit({ ...directMessage, content: 'hello there!' }, 1_700_000_060_000, context);
      expect(edited).toMatchObject({
        chat: { type: 'person', id: '1240000000000000009' },
        text: 'hello there!',
        platform_message_id: '1250000000000000001:edit:1700000060000',
        event: { type: 'edited', message_id: '1250000000000000001' },
      });
    });
  });
});

describe('normalizeDeletion', () => {
  const place = {
    messageId: '1250000000000000001',
    channelId: '1230000000000000100',
    guildId: '1220000000000000001',
    threadParentId: null,
    author: directMessage.author,
  };

  describe('when a cached message is deleted', () => {
    it("is a deleted event of the message's author, without text", () => {
      expect(normalizeDeletion(place, context)).toMatchObject({
        chat: { type: 'group', id: '1230000000000000100' },
        sender: { id: '234567890123456789', is_bot: false },
        text: '',
        elements: [],
        platform_message_id: '1250000000000000001:deleted',
        event: { type: 'deleted', message_id: '1250000000000000001' },
      });
    });
  });

  describe('when the deleted message was not cached', () => {
    it('returns null: Discord does not say whose it was', () => {
      expect(normalizeDeletion({ ...place, author: null }, context)).toBeNull();
    });
  });
});

describe('normalizeReaction', () => {
  const reaction = {
    place: {
      messageId: '1250000000000000001',
      channelId: '1260000000000000001',
      guildId: '1220000000000000001',
      threadParentId: '1230000000000000100',
      author: null,
    },
    user: directMessage.author,
    emoji: '👍',
    removed: false,
  };

  describe('when someone reacts to a message in a thread', () => {
    it('is a reaction event of the reacting user in the thread, keyed by who, what and when', () => {
      expect(normalizeReaction(reaction, context)).toMatchObject({
        chat: { type: 'group', id: '1230000000000000100', thread: '1260000000000000001' },
        sender: { id: '234567890123456789', name: 'Alice A.' },
        text: '',
        platform_message_id: `1250000000000000001:react:234567890123456789:👍:${context.receivedAt}`,
        event: { type: 'reaction', message_id: '1250000000000000001', emoji: '👍' },
      });
    });
  });

  describe('when a reaction is removed', () => {
    it('is a removed reaction event with an id of its own', () => {
      const removed = normalizeReaction({ ...reaction, removed: true }, context);
      expect(removed?.event).toEqual({
        type: 'reaction',
        message_id: '1250000000000000001',
        emoji: '👍',
        removed: true,
      });
      expect(removed?.platform_message_id).toMatch(/^1250000000000000001:unreact:/);
    });
  });
});

describe("events on the bot's own messages, or by the bot", () => {
  const bot = { ...directMessage.author, id: BOT_USER_ID, bot: true };

  it('are none of the users: null (a streamed answer edits its message with every preview)', () => {
    expect(normalizeEdit({ ...directMessage, author: bot }, 1, context)).toBeNull();
    const place = { messageId: '1', channelId: '2', guildId: null, threadParentId: null, author: bot };
    expect(normalizeDeletion(place, context)).toBeNull();
    expect(
      normalizeReaction(
        { place: { ...place, author: null }, user: bot, emoji: '👍', removed: false },
        context,
      ),
    ).toBeNull();
  });
});
