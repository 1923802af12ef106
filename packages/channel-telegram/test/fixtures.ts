import type { Update } from 'grammy/types';
import type { BotIdentity } from '../src/inbound/normalize.js';

// Updates in the shape the Bot API sends them (captured from getUpdates, ids changed).

export const BOT: BotIdentity = { id: 7_000_000_001, username: 'SwitchboardBot' };

const alice = {
  id: 111_222_333,
  is_bot: false,
  first_name: 'Alice',
  last_name: 'Liddell',
  username: 'alice',
  language_code: 'en',
};
const otherBot = { id: 5_555_555, is_bot: true, first_name: 'Other', username: 'other_bot' };
const privateChat = {
  id: 111_222_333,
  first_name: 'Alice',
  last_name: 'Liddell',
  username: 'alice',
  type: 'private' as const,
};
const group = {
  id: -4_012_345_678,
  title: 'Tea party',
  type: 'group' as const,
  all_members_are_administrators: true,
};
const forum = {
  id: -1_001_234_567_890,
  title: 'Wonderland',
  is_forum: true as const,
  type: 'supergroup' as const,
};

export const privateText: Update = {
  update_id: 912_345_678,
  message: { message_id: 42, from: alice, chat: privateChat, date: 1_735_000_000, text: 'hello there' },
};

export const groupMention: Update = {
  update_id: 912_345_679,
  message: {
    message_id: 77,
    from: alice,
    chat: group,
    date: 1_735_000_001,
    text: 'hi @SwitchboardBot, what time is it?',
    entities: [{ offset: 3, length: 15, type: 'mention' }],
  },
};

export const groupMentionOfSomeoneElse: Update = {
  update_id: 912_345_680,
  message: {
    message_id: 78,
    from: alice,
    chat: group,
    date: 1_735_000_002,
    text: 'ask @hatter about it',
    entities: [{ offset: 4, length: 7, type: 'mention' }],
  },
};

export const groupPlain: Update = {
  update_id: 912_345_681,
  message: { message_id: 79, from: alice, chat: group, date: 1_735_000_003, text: 'just chatting' },
};

export const groupCommandForBot: Update = {
  update_id: 912_345_682,
  message: {
    message_id: 80,
    from: alice,
    chat: group,
    date: 1_735_000_004,
    text: '/ask@SwitchboardBot why is a raven like a desk?',
    entities: [{ offset: 0, length: 19, type: 'bot_command' }],
  },
};

export const groupCommandForOtherBot: Update = {
  update_id: 912_345_683,
  message: {
    message_id: 81,
    from: alice,
    chat: group,
    date: 1_735_000_005,
    text: '/start@other_bot',
    entities: [{ offset: 0, length: 16, type: 'bot_command' }],
  },
};

export const privateCommand: Update = {
  update_id: 912_345_684,
  message: {
    message_id: 43,
    from: alice,
    chat: privateChat,
    date: 1_735_000_006,
    text: '/start',
    entities: [{ offset: 0, length: 6, type: 'bot_command' }],
  },
};

export const groupReplyToBot: Update = {
  update_id: 912_345_685,
  message: {
    message_id: 82,
    from: alice,
    chat: group,
    date: 1_735_000_007,
    text: 'and then?',
    reply_to_message: {
      message_id: 70,
      from: { id: BOT.id, is_bot: true, first_name: 'Switchboard', username: BOT.username },
      chat: group,
      date: 1_735_000_000,
      text: 'Once upon a time',
      reply_to_message: undefined,
    },
  },
};

export const forumTopicMessage: Update = {
  update_id: 912_345_686,
  message: {
    message_id: 501,
    message_thread_id: 500,
    is_topic_message: true,
    from: alice,
    chat: forum,
    date: 1_735_000_008,
    text: '@SwitchboardBot status?',
    entities: [{ offset: 0, length: 15, type: 'mention' }],
    // Telegram links every topic message to the topic's first (service) message.
    reply_to_message: {
      message_id: 500,
      message_thread_id: 500,
      is_topic_message: true,
      from: alice,
      chat: forum,
      date: 1_734_999_000,
      forum_topic_created: { name: 'Status', icon_color: 7_322_096 },
      reply_to_message: undefined,
    },
  },
};

export const photoWithCaption: Update = {
  update_id: 912_345_687,
  message: {
    message_id: 44,
    from: alice,
    chat: privateChat,
    date: 1_735_000_009,
    photo: [
      { file_id: 'AgACAgQAAxkBAAIBsmall', file_unique_id: 'AQADs', file_size: 1_234, width: 90, height: 60 },
      {
        file_id: 'AgACAgQAAxkBAAIBlarge',
        file_unique_id: 'AQADl',
        file_size: 81_234,
        width: 1280,
        height: 853,
      },
    ],
    caption: 'look @SwitchboardBot',
    caption_entities: [{ offset: 5, length: 15, type: 'mention' }],
  },
};

export const voiceNote: Update = {
  update_id: 912_345_688,
  message: {
    message_id: 45,
    from: alice,
    chat: privateChat,
    date: 1_735_000_010,
    voice: {
      duration: 3,
      mime_type: 'audio/ogg',
      file_id: 'AwACAgQAAxkBAAIBvoice',
      file_unique_id: 'AgADv',
      file_size: 9_876,
    },
  },
};

export const documentMessage: Update = {
  update_id: 912_345_689,
  message: {
    message_id: 46,
    from: alice,
    chat: privateChat,
    date: 1_735_000_011,
    document: {
      file_name: 'report.pdf',
      mime_type: 'application/pdf',
      file_id: 'BQACAgQAAxkBAAIBdoc',
      file_unique_id: 'AgADd',
      file_size: 55_555,
    },
  },
};

export const fromOtherBot: Update = {
  update_id: 912_345_690,
  message: {
    message_id: 83,
    from: otherBot,
    chat: group,
    date: 1_735_000_012,
    text: '@SwitchboardBot ping',
    entities: [{ offset: 0, length: 15, type: 'mention' }],
  },
};

export const editedMessage: Update = {
  update_id: 912_345_691,
  edited_message: {
    message_id: 42,
    from: alice,
    chat: privateChat,
    date: 1_735_000_000,
    edit_date: 1_735_000_100,
    text: 'hello there!',
  },
};

export const reactionAdded: Update = {
  update_id: 912_345_695,
  message_reaction: {
    chat: group,
    message_id: 77,
    user: alice,
    date: 1_735_000_200,
    old_reaction: [{ type: 'emoji', emoji: '👀' }],
    new_reaction: [
      { type: 'emoji', emoji: '👀' },
      { type: 'emoji', emoji: '👍' },
    ],
  },
};

export const reactionRemoved: Update = {
  update_id: 912_345_696,
  message_reaction: {
    chat: group,
    message_id: 77,
    user: alice,
    date: 1_735_000_201,
    old_reaction: [{ type: 'emoji', emoji: '👍' }],
    new_reaction: [],
  },
};

export const myChatMember: Update = {
  update_id: 912_345_692,
  my_chat_member: {
    chat: group,
    from: alice,
    date: 1_735_000_013,
    old_chat_member: {
      user: { id: BOT.id, is_bot: true, first_name: 'Switchboard', username: BOT.username },
      status: 'left',
    },
    new_chat_member: {
      user: { id: BOT.id, is_bot: true, first_name: 'Switchboard', username: BOT.username },
      status: 'member',
    },
  },
};

export const newMembers: Update = {
  update_id: 912_345_693,
  message: {
    message_id: 84,
    from: alice,
    chat: group,
    date: 1_735_000_014,
    new_chat_members: [alice],
  },
};

export const sticker: Update = {
  update_id: 912_345_694,
  message: {
    message_id: 47,
    from: alice,
    chat: privateChat,
    date: 1_735_000_015,
    sticker: {
      file_id: 'CAACAgIAAxkBAAIBsticker',
      file_unique_id: 'AgADs',
      type: 'regular',
      width: 512,
      height: 512,
      is_animated: false,
      is_video: false,
    },
  },
};

export const anonymousAdmin: Update = {
  update_id: 912_345_695,
  message: {
    message_id: 85,
    from: { id: 1_087_968_824, is_bot: true, first_name: 'Group', username: 'GroupAnonymousBot' },
    sender_chat: { id: -1_001_234_567_890, title: 'Wonderland', type: 'supergroup' },
    chat: forum,
    date: 1_735_000_016,
    text: '@SwitchboardBot hi from the admins',
    entities: [{ offset: 0, length: 15, type: 'mention' }],
  },
};
