import { type Element, type InboundMessage, parseInboundMessage } from '@switchboard/core';
import type {
  DiscordAttachmentData,
  DiscordMessageData,
  DiscordMessagePlace,
  DiscordReactionData,
  DiscordUserData,
} from './message-data.js';

/** What `normalizeMessage` needs besides the message. */
export interface NormalizeContext {
  /** The gateway id of the new message. */
  id: string;
  /** `channels[].id`. */
  channelId: string;
  /** The bot's own user id, to recognise mentions of it. */
  botUserId: string;
  /** Milliseconds since the epoch. */
  receivedAt: number;
}

/** Message types a user writes; joins, pins, boosts, thread notices… are not conversation. */
const CONVERSATION_TYPES: ReadonlySet<number> = new Set([0 /* Default */, 19 /* Reply */]);

/** `<@123>` and the legacy nickname form `<@!123>`. */
const USER_MENTION = /<@!?(\d+)>/g;

/**
 * A Discord message as the unified message (docs/design.md §3 "discord"), or null when its type is not
 * conversation (member joins, pins…). DM → person with the DM channel as chat; guild channel →
 * group; a thread → its parent channel as chat and the thread as `chat.thread`, so
 * `session_scope` decides whether a thread is a conversation of its own. User mentions in the
 * text read `@name`; a mention of the bot, or a reply to one of its messages, sets
 * `mentions_bot`. Webhook posts count as bot authors.
 */
export function normalizeMessage(data: DiscordMessageData, context: NormalizeContext): InboundMessage | null {
  if (!CONVERSATION_TYPES.has(data.type)) return null;
  const mentioned = new Map(data.mentions.map((user) => [user.id, user]));
  const text = data.content.replace(USER_MENTION, (token, id: string) => {
    const user = mentioned.get(id);
    return user === undefined ? token : `@${displayName(user)}`;
  });

  const elements: Element[] = [];
  if (data.reference !== null) {
    elements.push({
      type: 'quote',
      message_id: data.reference.messageId,
      ...(data.reference.content ? { text: data.reference.content } : {}),
    });
  }
  if (text !== '') elements.push({ type: 'text', text });
  for (const user of data.mentions) {
    elements.push({
      type: 'mention',
      user_id: user.id,
      name: displayName(user),
      is_bot_self: user.id === context.botUserId,
    });
  }
  for (const attachment of data.attachments)
    elements.push(attachmentElement(attachment, data.isVoiceMessage));

  const repliesToBot = data.reference?.authorId === context.botUserId;
  return parseInboundMessage({
    id: context.id,
    platform: 'discord',
    channel: context.channelId,
    chat: chatOf(data),
    sender: {
      id: data.author.id,
      name: displayName(data.author),
      is_bot: data.author.bot || data.webhookId !== null,
    },
    elements,
    text,
    mentions_bot: mentioned.has(context.botUserId) || repliesToBot,
    platform_message_id: data.id,
    received_at: context.receivedAt,
    raw: data,
  });
}

/**
 * An edited message (MESSAGE_UPDATE with an `edited_timestamp`) as an `edited` event
 * (docs/design.md §2 "Events") carrying the new text; its id adds the edit's time to the message
 * id, so that each edit is an event of its own. Null as for `normalizeMessage`, and for the bot's
 * own messages, which a streamed answer edits with every preview.
 */
export function normalizeEdit(
  data: DiscordMessageData,
  editedAt: number,
  context: NormalizeContext,
): InboundMessage | null {
  // The bot's own messages change with every preview of a streamed answer: not the users' events.
  if (data.author.id === context.botUserId) return null;
  const message = normalizeMessage(data, context);
  if (message === null) return null;
  return {
    ...message,
    platform_message_id: `${data.id}:edit:${editedAt}`,
    event: { type: 'edited', message_id: data.id },
  };
}

/**
 * A deleted message as a `deleted` event of its author; null when discord.js did not have the
 * message cached, since Discord says only which message went, not whose it was; null for the bot's
 * own messages.
 */
export function normalizeDeletion(
  place: DiscordMessagePlace,
  context: NormalizeContext,
): InboundMessage | null {
  if (place.author === null || place.author.id === context.botUserId) return null;
  return parseInboundMessage({
    id: context.id,
    platform: 'discord',
    channel: context.channelId,
    chat: chatOf(place),
    sender: { id: place.author.id, name: displayName(place.author), is_bot: place.author.bot },
    text: '',
    platform_message_id: `${place.messageId}:deleted`,
    received_at: context.receivedAt,
    raw: place,
    event: { type: 'deleted', message_id: place.messageId },
  });
}

/**
 * A reaction added or removed as a `reaction` event of the user who reacted (null for the bot's
 * own). Discord gives the
 * event no id of its own: the time it arrived tells a reaction taken away and given again apart.
 */
export function normalizeReaction(
  data: DiscordReactionData,
  context: NormalizeContext,
): InboundMessage | null {
  const { place, user, emoji, removed } = data;
  if (user.id === context.botUserId) return null;
  return parseInboundMessage({
    id: context.id,
    platform: 'discord',
    channel: context.channelId,
    chat: chatOf(place),
    sender: { id: user.id, name: displayName(user), is_bot: user.bot },
    text: '',
    platform_message_id: `${place.messageId}:${removed ? 'unreact' : 'react'}:${user.id}:${emoji}:${context.receivedAt}`,
    received_at: context.receivedAt,
    raw: data,
    event: { type: 'reaction', message_id: place.messageId, emoji, ...(removed ? { removed: true } : {}) },
  });
}

function chatOf(
  data: Pick<DiscordMessageData, 'channelId' | 'guildId' | 'threadParentId'>,
): InboundMessage['chat'] {
  if (data.guildId === null) return { type: 'person', id: data.channelId };
  if (data.threadParentId === null) return { type: 'group', id: data.channelId };
  return { type: 'group', id: data.threadParentId, thread: data.channelId };
}

function displayName(user: DiscordUserData): string {
  return user.globalName ?? user.username;
}

function attachmentElement(attachment: DiscordAttachmentData, isVoiceMessage: boolean): Element {
  const type = attachment.contentType ?? '';
  if (type.startsWith('image/')) return { type: 'image', url: attachment.url, file_id: attachment.id };
  if (isVoiceMessage && type.startsWith('audio/'))
    return { type: 'voice', url: attachment.url, file_id: attachment.id };
  return { type: 'file', url: attachment.url, file_id: attachment.id, name: attachment.name };
}
