import type { DiscordMessageData } from '../../src/inbound/message-data.js';

/** The bot's user id in every fixture. */
export const BOT_USER_ID = '1100000000000000001';

const alice = { id: '234567890123456789', username: 'alice', globalName: 'Alice A.', bot: false };

/** A DM as discord.js delivers it: no guild, the DM channel's id as channel. */
export const directMessage: DiscordMessageData = {
  id: '1250000000000000001',
  type: 0,
  channelId: '1240000000000000009',
  guildId: null,
  threadParentId: null,
  content: 'hello there',
  author: alice,
  webhookId: null,
  mentions: [],
  attachments: [],
  isVoiceMessage: false,
  reference: null,
};

/** `@switchboard what's up <@bob>` in a guild text channel. */
export const guildMention: DiscordMessageData = {
  ...directMessage,
  id: '1250000000000000002',
  channelId: '1230000000000000100',
  guildId: '1230000000000000001',
  content: `<@${BOT_USER_ID}> what's up <@!345678901234567890>`,
  mentions: [
    { id: BOT_USER_ID, username: 'switchboard', globalName: null, bot: true },
    { id: '345678901234567890', username: 'bob', globalName: null, bot: false },
  ],
};

/** A message in a thread of channel 1230000000000000100. */
export const threadMessage: DiscordMessageData = {
  ...guildMention,
  id: '1250000000000000003',
  channelId: '1260000000000000777',
  threadParentId: '1230000000000000100',
  content: 'still talking in the thread',
  mentions: [],
};

/** A reply (type 19) to one of the bot's messages, with a picture, a PDF and a voice note. */
export const replyWithAttachments: DiscordMessageData = {
  ...guildMention,
  id: '1250000000000000004',
  type: 19,
  content: 'see attached',
  mentions: [],
  attachments: [
    {
      id: '1270000000000000001',
      url: 'https://cdn.discordapp.com/attachments/1/2/cat.png',
      name: 'cat.png',
      contentType: 'image/png',
      size: 120_000,
    },
    {
      id: '1270000000000000002',
      url: 'https://cdn.discordapp.com/attachments/1/3/report.pdf',
      name: 'report.pdf',
      contentType: 'application/pdf',
      size: 30_000_000,
    },
  ],
  reference: { messageId: '1250000000000000000', authorId: BOT_USER_ID, content: 'earlier answer' },
};

/** A voice message: an ogg attachment and the IS_VOICE_MESSAGE flag, no text. */
export const voiceMessage: DiscordMessageData = {
  ...directMessage,
  id: '1250000000000000005',
  content: '',
  attachments: [
    {
      id: '1270000000000000003',
      url: 'https://cdn.discordapp.com/attachments/1/4/voice-message.ogg',
      name: 'voice-message.ogg',
      contentType: 'audio/ogg',
      size: 9_000,
    },
  ],
  isVoiceMessage: true,
};
