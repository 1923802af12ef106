import { type Logger, silentLogger } from '@switchboard/core';

// Events in the shapes Slack sends them (Events API `event` objects, trimmed of nothing the
// normalizer reads). The bot is UBOT / BBOT; people are U0001 (ann) and U0002.

export const BOT_USER_ID = 'UBOT';

export const channelMessageWithMention = {
  user: 'U0001',
  type: 'message',
  ts: '1718000000.000100',
  client_msg_id: '5c9d7d5e-6a4b-4b5a-9d5e-1f2a3b4c5d6e',
  text: '<@UBOT> what about <@U0002|bob> &amp; <#C0002|random>? see <https://example.com/a?b=1&amp;c=2|the docs> &lt;3 <!here>',
  team: 'T0001',
  blocks: [{ type: 'rich_text', block_id: 'x1', elements: [] }],
  channel: 'C0001',
  event_ts: '1718000000.000100',
  channel_type: 'channel',
};

export const directMessage = {
  user: 'U0001',
  type: 'message',
  ts: '1718000001.000200',
  client_msg_id: '0b6f3e4a-1111-4c2d-9e8f-000000000001',
  text: 'hello there',
  team: 'T0001',
  user_profile: {
    avatar_hash: 'g123',
    display_name: 'ann',
    real_name: 'Ann Example',
    name: 'ann.example',
    is_restricted: false,
  },
  channel: 'D0001',
  event_ts: '1718000001.000200',
  channel_type: 'im',
};

export const threadReply = {
  user: 'U0002',
  type: 'message',
  ts: '1718000003.000400',
  text: 'in the thread',
  team: 'T0001',
  thread_ts: '1718000002.000300',
  parent_user_id: 'U0001',
  channel: 'G0001',
  event_ts: '1718000003.000400',
  channel_type: 'group',
};

export const fileShare = {
  type: 'message',
  subtype: 'file_share',
  text: 'two files',
  files: [
    {
      id: 'F0001',
      name: 'cat.png',
      mimetype: 'image/png',
      filetype: 'png',
      url_private: 'https://files.slack.com/files-pri/T0001-F0001/cat.png',
    },
    {
      id: 'F0002',
      name: 'report.pdf',
      mimetype: 'application/pdf',
      filetype: 'pdf',
      size: 48_213,
      url_private: 'https://files.slack.com/files-pri/T0001-F0002/report.pdf',
      url_private_download: 'https://files.slack.com/files-pri/T0001-F0002/download/report.pdf',
    },
    {
      id: 'F0004',
      name: 'talk.mp4',
      mimetype: 'video/mp4',
      filetype: 'mp4',
      size: 90_000_000,
      url_private: 'https://files.slack.com/files-pri/T0001-F0004/talk.mp4',
      url_private_download: 'https://files.slack.com/files-pri/T0001-F0004/download/talk.mp4',
    },
    {
      id: 'F0003',
      name: 'audio_message.webm',
      mimetype: 'audio/webm',
      subtype: 'slack_audio',
      url_private: 'https://files.slack.com/files-pri/T0001-F0003/audio_message.webm',
    },
  ],
  upload: false,
  user: 'U0001',
  display_as_bot: false,
  ts: '1718000004.000500',
  channel: 'D0001',
  event_ts: '1718000004.000500',
  channel_type: 'im',
};

export const botMessage = {
  subtype: 'bot_message',
  text: 'Deploy finished',
  username: 'CI',
  bot_id: 'B0009',
  type: 'message',
  ts: '1718000005.000600',
  channel: 'C0001',
  event_ts: '1718000005.000600',
  channel_type: 'channel',
};

export const ownMessage = {
  user: 'UBOT',
  type: 'message',
  ts: '1718000006.000700',
  bot_id: 'BBOT',
  app_id: 'A0001',
  text: 'echo: hello',
  team: 'T0001',
  bot_profile: { id: 'BBOT', name: 'switchboard', app_id: 'A0001' },
  channel: 'D0001',
  event_ts: '1718000006.000700',
  channel_type: 'im',
};

export const messageChanged = {
  type: 'message',
  subtype: 'message_changed',
  message: {
    type: 'message',
    user: 'U0001',
    text: 'edited',
    ts: '1718000000.000100',
    edited: { user: 'U0001', ts: '1718000010.000000' },
  },
  previous_message: { type: 'message', user: 'U0001', text: 'original', ts: '1718000000.000100' },
  channel: 'C0001',
  hidden: true,
  ts: '1718000010.000900',
  event_ts: '1718000010.000900',
  channel_type: 'channel',
};

export const channelJoin = {
  user: 'U0003',
  type: 'message',
  subtype: 'channel_join',
  ts: '1718000011.001000',
  text: '<@U0003> has joined the channel',
  channel: 'C0001',
  event_ts: '1718000011.001000',
  channel_type: 'channel',
};

export const appMention = {
  type: 'app_mention',
  user: 'U0001',
  ts: '1718000000.000100',
  client_msg_id: '5c9d7d5e-6a4b-4b5a-9d5e-1f2a3b4c5d6e',
  text: '<@UBOT> what about <@U0002|bob> &amp; <#C0002|random>? see <https://example.com/a?b=1&amp;c=2|the docs> &lt;3 <!here>',
  team: 'T0001',
  channel: 'C0001',
  event_ts: '1718000000.000100',
};

export const reactionAdded = {
  type: 'reaction_added',
  user: 'U0001',
  reaction: 'thumbsup',
  item: { type: 'message', channel: 'C0001', ts: '1718000000.000100' },
  item_user: 'UBOT',
  event_ts: '1718000012.001100',
};

/** A logger that keeps its warning lines: the messages, and each line's bindings with it as `msg`. */
export function warningLogger() {
  const warnings: string[] = [];
  const lines: Record<string, unknown>[] = [];
  const logger: Logger = {
    ...silentLogger,
    warn: (bindings: object, message: string) => {
      warnings.push(message);
      lines.push({ ...bindings, msg: message });
    },
    child: () => logger,
  };
  return { logger, warnings, lines };
}
