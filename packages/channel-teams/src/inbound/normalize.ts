import { type Element, type InboundMessage, parseInboundMessage } from '@switchboard/core';
import { z } from 'zod';
import { activityRefKey } from '../activity-ref.js';
import { type MessageActivity, THREAD_MARKER } from './activity.js';

/** What the normalizer needs besides the activity; passed in so that it stays pure. */
export interface NormalizeContext {
  /** The configured channel id (`channels[].id`). */
  channelId: string;
  /** The gateway id for the message (`newMessageId()`). */
  messageId: string;
  /** Milliseconds since the epoch. */
  receivedAt: number;
}

type Mention = Extract<Element, { type: 'mention' }>;

/** The conversation and, in a Teams channel, the reply chain (the root post's id). */
function chatOf(activity: MessageActivity): InboundMessage['chat'] {
  const { id, conversationType, isGroup } = activity.conversation;
  const type =
    conversationType === 'personal' || (conversationType === undefined && !isGroup) ? 'person' : 'group';
  const marker = id.indexOf(THREAD_MARKER);
  if (marker < 0) return { type, id };
  const thread = id.slice(marker + THREAD_MARKER.length);
  return { type, id: id.slice(0, marker), ...(thread === '' ? {} : { thread }) };
}

/**
 * `<at>Name</at>` markup as it appears in `text` (a `<` in a name arrives as `&lt;`). The name
 * stops at the next `<`, so that a text of unclosed `<at>`s is scanned once, not once per tag.
 */
const AT_TAG = /<at>([^<]*)<\/at>/g;

/**
 * The text people read: the bot's own `<at>…</at>` removed (it only addresses the message), the
 * others shown as `@Name`, and the mention elements of `entities`. One pass over the text and one
 * over the entities, however many there are: a tag is the bot's when it is the `text` of a
 * mention entity of the bot (the Bot Framework writes a mention's `text` as its `<at>` tag), looked
 * up in a set rather than each entity's text searched for in the text.
 */
function textAndMentions(activity: MessageActivity): { text: string; mentions: Mention[] } {
  const botId = activity.recipient.id;
  const mentions: Mention[] = [];
  const botTags = new Set<string>();
  for (const entity of activity.entities ?? []) {
    if (entity.type !== 'mention' || entity.mentioned === undefined) continue;
    const { id, name } = entity.mentioned;
    const isBot = id === botId;
    mentions.push({
      type: 'mention',
      user_id: id,
      is_bot_self: isBot,
      ...(name === undefined ? {} : { name }),
    });
    if (isBot && entity.text !== undefined) botTags.add(entity.text);
  }
  const text = (activity.text ?? '').replace(AT_TAG, (tag: string, name: string) =>
    botTags.has(tag) ? '' : `@${name}`,
  );
  return { text: text.replace(/\s+/g, ' ').trim(), mentions };
}

/**
 * A file a person shared with the bot: its `contentUrl` is the file's SharePoint page, which the
 * bot cannot read; `content.downloadUrl` is a short-lived, pre-authenticated download link.
 */
const FILE_DOWNLOAD_INFO = 'application/vnd.microsoft.teams.file.download.info';
const DownloadInfoSchema = z.object({ downloadUrl: z.string().min(1) });

/**
 * Pictures as images; other files as files, a shared file with its download link (or no URL when
 * it has none). Teams' HTML rendering of the text is not a file.
 */
function attachmentElements(activity: MessageActivity): Element[] {
  return (activity.attachments ?? [])
    .filter((attachment) => attachment.contentType !== 'text/html')
    .map((attachment): Element => {
      const name = attachment.name === undefined ? {} : { name: attachment.name };
      if (attachment.contentType === FILE_DOWNLOAD_INFO) {
        const info = DownloadInfoSchema.safeParse(attachment.content);
        return { type: 'file', ...(info.success ? { url: info.data.downloadUrl } : {}), ...name };
      }
      const url = attachment.contentUrl === undefined ? {} : { url: attachment.contentUrl };
      if (attachment.contentType.startsWith('image/')) return { type: 'image', ...url };
      return { type: 'file', ...url, ...name };
    });
}

/**
 * Turns a Teams `message` activity into an `InboundMessage`. Pure. `personal` conversations are
 * people, `groupChat` and `channel` ones groups; a channel's reply chain is the thread. The bot is
 * the activity's `recipient`: a mention entity of it sets `mentions_bot`, a message from it
 * `is_bot`. `platform_message_id` is the activity's `activityRefKey`: the redelivery key, and
 * where the reply goes.
 */
export function normalizeTeamsActivity(activity: MessageActivity, context: NormalizeContext): InboundMessage {
  const { text, mentions } = textAndMentions(activity);
  const { from, recipient } = activity;
  return parseInboundMessage({
    id: context.messageId,
    platform: 'teams',
    channel: context.channelId,
    chat: chatOf(activity),
    sender: {
      id: from.id,
      ...(from.name === undefined ? {} : { name: from.name }),
      is_bot: from.id === recipient.id || from.role === 'bot',
    },
    elements: [
      ...(text === '' ? [] : [{ type: 'text' as const, text }]),
      ...mentions,
      ...attachmentElements(activity),
    ],
    text,
    mentions_bot: mentions.some((mention) => mention.is_bot_self),
    platform_message_id: activityRefKey({
      serviceUrl: activity.serviceUrl,
      conversationId: activity.conversation.id,
      activityId: activity.id,
    }),
    received_at: context.receivedAt,
    raw: activity,
  });
}
