import {
  type Element,
  type InboundMessage,
  type MediaType,
  type InboundMessageInput,
  parseInboundMessage,
} from '@switchboard/core';
import type { Message, MessageEntity, MessageReactionUpdated, ReactionType, Update } from 'grammy/types';

/** The bot account, as getMe returned it at start. */
export interface BotIdentity {
  id: number;
  username: string;
}

/** What normalizing one update needs besides the update; passed in so that it stays pure. */
export interface NormalizeContext {
  /** The configured channel id (`channels[].id`). */
  channelId: string;
  bot: BotIdentity;
  /** The gateway id the message gets (`newMessageId()`). */
  id: string;
  /** Milliseconds since the epoch at which the update arrived. */
  receivedAt: number;
  /** `channels[].media.max_bytes`: a larger file is marked `too_large`. */
  maxMediaBytes: number;
}

/** A message for the ingress, or why the update is not one (acked and ignored). */
export type NormalizeResult = { message: InboundMessage } | { unsupported: string };

/**
 * The updates the channel asks Telegram for; every other kind is ignored when it still arrives.
 * Telegram sends `message_reaction` only to bots that are administrators of the group (and in
 * private chats), and only when asked for it here.
 */
export const ALLOWED_UPDATES = ['message', 'edited_message', 'message_reaction'] as const;

/** `<chat id>:<message id>`: message ids are only unique within their chat. */
export function platformMessageId(chatId: number | string, messageId: number): string {
  return `${chatId}:${messageId}`;
}

/** `/start@MyBot` → `{ name: 'start', target: 'MyBot' }`. */
function parseCommand(token: string): { name: string; target: string | undefined } {
  const [name = '', target] = token.slice(1).split('@', 2);
  return { name, target };
}

interface TextParts {
  elements: Element[];
  mentionsBot: boolean;
}

/**
 * Splits the text into text, mention and command elements along Telegram's entities (offsets
 * are UTF-16 code units, like JavaScript strings). Only a command that starts the text is a
 * command — Telegram clients send only those to bots — and it takes the rest of the text as
 * its arguments.
 */
function textParts(
  text: string,
  entities: readonly MessageEntity[],
  bot: BotIdentity,
  isPrivate: boolean,
): TextParts {
  const elements: Element[] = [];
  let mentionsBot = false;
  let cursor = 0;
  const pushText = (end: number) => {
    if (end > cursor) elements.push({ type: 'text', text: text.slice(cursor, end) });
  };
  const sorted = [...entities].sort((a, b) => a.offset - b.offset);
  for (const entity of sorted) {
    if (entity.offset < cursor) continue;
    const token = text.slice(entity.offset, entity.offset + entity.length);
    if (entity.type === 'bot_command' && entity.offset === 0) {
      const { name, target } = parseCommand(token);
      const addressed =
        target === undefined ? isPrivate : target.toLowerCase() === bot.username.toLowerCase();
      mentionsBot ||= addressed;
      elements.push({ type: 'command', name, args: text.slice(entity.length).trim() });
      return { elements, mentionsBot };
    }
    if (entity.type === 'mention') {
      pushText(entity.offset);
      const username = token.slice(1);
      const isBotSelf = username.toLowerCase() === bot.username.toLowerCase();
      mentionsBot ||= isBotSelf;
      elements.push(
        isBotSelf
          ? { type: 'mention', user_id: String(bot.id), name: bot.username, is_bot_self: true }
          : // Telegram gives only the username for @mentions, so it stands in for the id.
            { type: 'mention', user_id: username, name: username, is_bot_self: false },
      );
      cursor = entity.offset + entity.length;
    } else if (entity.type === 'text_mention') {
      pushText(entity.offset);
      const isBotSelf = entity.user.id === bot.id;
      mentionsBot ||= isBotSelf;
      elements.push({
        type: 'mention',
        user_id: String(entity.user.id),
        name: entity.user.first_name,
        is_bot_self: isBotSelf,
      });
      cursor = entity.offset + entity.length;
    }
  }
  pushText(text.length);
  return { elements, mentionsBot };
}

/** The fields Telegram gives of a file, as a media element's. */
interface TelegramFile {
  file_id: string;
  file_size?: number;
  file_name?: string;
  mime_type?: string;
}

function mediaOf(type: MediaType, file: TelegramFile, maxBytes: number, mimeType = file.mime_type): Element {
  return {
    type,
    file_id: file.file_id,
    ...(file.file_name === undefined ? {} : { name: file.file_name }),
    ...(mimeType === undefined ? {} : { mime_type: mimeType }),
    ...(file.file_size === undefined ? {} : { size: file.file_size }),
    ...(file.file_size !== undefined && file.file_size > maxBytes ? { too_large: true as const } : {}),
  };
}

function mediaElement(message: Message, maxBytes: number): Element | undefined {
  // Telegram lists a photo's sizes smallest first; photos are always re-encoded as JPEG.
  const photo = message.photo?.at(-1);
  if (photo !== undefined) return mediaOf('image', photo, maxBytes, 'image/jpeg');
  if (message.voice !== undefined) return mediaOf('voice', message.voice, maxBytes);
  if (message.audio !== undefined) return mediaOf('audio', message.audio, maxBytes);
  if (message.video !== undefined) return mediaOf('video', message.video, maxBytes);
  if (message.document !== undefined) return mediaOf('file', message.document, maxBytes);
  return undefined;
}

/**
 * The message this one replies to, unless the reply is only the forum's implicit link to the
 * topic's first message (Telegram sets `reply_to_message` on every topic message).
 */
function repliedTo(message: Message): Message | undefined {
  const reply = message.reply_to_message;
  if (reply === undefined) return undefined;
  if (message.is_topic_message === true && reply.message_id === message.message_thread_id) return undefined;
  return reply;
}

function senderOf(message: Pick<Message, 'from' | 'sender_chat'>): InboundMessageInput['sender'] | undefined {
  // Anonymous group admins and linked channels post as a chat; `from` is then a placeholder bot.
  const chat = message.sender_chat;
  if (chat !== undefined) {
    const name = 'title' in chat ? chat.title : undefined;
    return { id: String(chat.id), ...(name === undefined ? {} : { name }), is_bot: false };
  }
  const from = message.from;
  if (from === undefined) return undefined;
  const name = [from.first_name, from.last_name].filter(Boolean).join(' ') || from.username;
  return { id: String(from.id), ...(name ? { name } : {}), is_bot: from.is_bot };
}

function updateKind(update: Update): string {
  return Object.keys(update).find((key) => key !== 'update_id') ?? 'empty update';
}

/** How a reaction reads: the emoji, a custom emoji's id, or `paid` for a paid (star) reaction. */
function emojiOf(reaction: ReactionType): string {
  if (reaction.type === 'emoji') return reaction.emoji;
  if (reaction.type === 'custom_emoji') return reaction.custom_emoji_id;
  return reaction.type;
}

/**
 * A `message_reaction` update → a `reaction` event. Telegram sends the user's whole reaction
 * list before and after; the event is the first reaction added, else the first one taken away.
 */
function reactionEvent(
  updateId: number,
  update: MessageReactionUpdated,
  context: NormalizeContext,
): NormalizeResult {
  const { chat } = update;
  const chatType: string = chat.type;
  if (chatType !== 'private' && chatType !== 'group' && chatType !== 'supergroup') {
    return { unsupported: `reaction in a ${chatType} chat` };
  }
  const sender = senderOf({ from: update.user, sender_chat: update.actor_chat });
  if (sender === undefined) return { unsupported: 'reaction without sender' };
  const before = new Set(update.old_reaction.map(emojiOf));
  const after = new Set(update.new_reaction.map(emojiOf));
  const added = [...after].find((emoji) => !before.has(emoji));
  const removed = [...before].find((emoji) => !after.has(emoji));
  const emoji = added ?? removed;
  if (emoji === undefined) return { unsupported: 'reaction that changed nothing' };
  const original = platformMessageId(chat.id, update.message_id);
  return {
    message: parseInboundMessage({
      id: context.id,
      platform: 'telegram',
      channel: context.channelId,
      chat: { type: chatType === 'private' ? 'person' : 'group', id: String(chat.id) },
      sender,
      text: '',
      // The update id: a redelivered update repeats it, two changes within one second do not.
      platform_message_id: `${original}:reaction:${updateId}`,
      received_at: context.receivedAt,
      raw: { message_reaction: update },
      event: {
        type: 'reaction',
        message_id: original,
        emoji,
        ...(added === undefined ? { removed: true } : {}),
      },
    } satisfies InboundMessageInput),
  };
}

/**
 * A Telegram update → the unified message (docs/design.md §2), or why it is not one. Pure. Handles
 * `message` updates with text, a caption, a photo (its largest size), a voice note, an audio, a
 * video or a document, with the size, type and name Telegram gives (`too_large` past
 * `maxMediaBytes`), and as events (docs/design.md §2 "Events") `edited_message` (an `edited`
 * event with the new text) and `message_reaction` (a `reaction` event); Telegram tells bots of no
 * deletion. Member changes, channel posts and service messages (joins, pins…) are unsupported.
 *
 * Private chats are `person`, groups and supergroups `group`; a forum topic becomes
 * `chat.thread`. `mentions_bot` is set by an @mention or text mention of the bot, a command
 * addressed to it (`/cmd@bot`, or `/cmd` in a private chat), or a reply to one of its messages.
 */
export function normalizeUpdate(update: Update, context: NormalizeContext): NormalizeResult {
  if (update.message_reaction !== undefined)
    return reactionEvent(update.update_id, update.message_reaction, context);
  const edited = update.edited_message;
  const message = update.message ?? edited;
  if (message === undefined) return { unsupported: updateKind(update) };
  const { chat } = message;
  // Typed as never a channel, but the body is only as good as its sender.
  const chatType: string = chat.type;
  if (chatType !== 'private' && chatType !== 'group' && chatType !== 'supergroup') {
    return { unsupported: `message in a ${chatType} chat` };
  }
  const sender = senderOf(message);
  if (sender === undefined) return { unsupported: 'message without sender' };
  const isPrivate = chat.type === 'private';

  const text = message.text ?? message.caption ?? '';
  const entities = (message.text === undefined ? message.caption_entities : message.entities) ?? [];
  const parts = textParts(text, entities, context.bot, isPrivate);
  const media = mediaElement(message, context.maxMediaBytes);
  if (text === '' && media === undefined) return { unsupported: 'message without text or media' };

  const reply = repliedTo(message);
  const quote: Element[] =
    reply === undefined
      ? []
      : [
          {
            type: 'quote',
            message_id: platformMessageId(chat.id, reply.message_id),
            ...((reply.text ?? reply.caption) === undefined ? {} : { text: reply.text ?? reply.caption }),
          },
        ];
  const repliesToBot = reply?.from?.id === context.bot.id;
  const thread =
    message.is_topic_message === true && message.message_thread_id !== undefined
      ? { thread: String(message.message_thread_id) }
      : {};

  return {
    message: parseInboundMessage({
      id: context.id,
      platform: 'telegram',
      channel: context.channelId,
      chat: { type: isPrivate ? 'person' : 'group', id: String(chat.id), ...thread },
      sender,
      elements: [...quote, ...(media === undefined ? [] : [media]), ...parts.elements],
      text,
      mentions_bot: parts.mentionsBot || repliesToBot,
      platform_message_id:
        edited === undefined
          ? platformMessageId(chat.id, message.message_id)
          : // Each edit comes in an update of its own (edit_date alone repeats within a second).
            `${platformMessageId(chat.id, message.message_id)}:edit:${update.update_id}`,
      received_at: context.receivedAt,
      raw: update,
      ...(edited === undefined
        ? {}
        : { event: { type: 'edited' as const, message_id: platformMessageId(chat.id, message.message_id) } }),
    } satisfies InboundMessageInput),
  };
}
