import { type Message, MessageFlags } from 'discord.js';

/**
 * The parts of a Discord message the normalizer reads, as plain JSON. discord.js hands out
 * `Message` objects tied to a live client and its caches; this shape is what remains once those
 * are resolved, so that normalization is a pure function tested with fixtures. It is also what
 * the gateway keeps as `InboundMessage.raw`.
 */
export interface DiscordMessageData {
  id: string;
  /** Discord's message type: 0 default, 19 reply; joins, pins, boosts… have others. */
  type: number;
  /** The channel the message was posted in: a DM, a guild text channel or a thread. */
  channelId: string;
  /** Null in DMs. */
  guildId: string | null;
  /** Set when `channelId` is a thread: the channel (text or forum) the thread belongs to. */
  threadParentId: string | null;
  content: string;
  author: DiscordUserData;
  /** Set when a webhook, not a user, posted the message. */
  webhookId: string | null;
  /** Users @-mentioned in `content`, Discord's `mentions` array. */
  mentions: DiscordUserData[];
  attachments: DiscordAttachmentData[];
  /** Discord's IS_VOICE_MESSAGE flag: the audio attachment is a voice note. */
  isVoiceMessage: boolean;
  /** The message this one replies to, with what the client knew of it. */
  reference: { messageId: string; authorId: string | null; content: string | null } | null;
}

export interface DiscordUserData {
  id: string;
  username: string;
  /** The display name users chose; null when they kept their username. */
  globalName: string | null;
  bot: boolean;
}

export interface DiscordAttachmentData {
  id: string;
  url: string;
  name: string;
  /** MIME type as Discord detected it; null for unknown files. */
  contentType: string | null;
}

/**
 * Where a message is and who wrote it, as far as discord.js knows it for an edit, deletion or
 * reaction: a message that is not cached (partial) has its ids only, no author.
 */
export interface DiscordMessagePlace {
  messageId: string;
  channelId: string;
  guildId: string | null;
  threadParentId: string | null;
  /** Null when the message was not cached. */
  author: DiscordUserData | null;
}

/** The place of a possibly partial message; the channel may be uncached too (a DM). */
export function toMessagePlace(message: {
  id: string;
  channelId: string;
  guildId: string | null;
  /** discord.js resolves it from its cache; an uncached channel may be missing. */
  channel: Message['channel'] | null | undefined;
  author: Message['author'] | null;
}): DiscordMessagePlace {
  const channel = message.channel ?? null;
  return {
    messageId: message.id,
    channelId: message.channelId,
    guildId: message.guildId ?? null,
    threadParentId: channel?.isThread() ? channel.parentId : null,
    author: message.author === null ? null : userData(message.author),
  };
}

/** A reaction added or removed, read from discord.js's `MessageReaction` and `User`. */
export interface DiscordReactionData {
  place: DiscordMessagePlace;
  user: DiscordUserData;
  /** A Unicode emoji, or a custom emoji's name (its id when the name is unknown). */
  emoji: string;
  removed: boolean;
}

/**
 * Reads a discord.js `Message` into `DiscordMessageData`. Returns null for a message without an
 * author, which Discord never sends but a malformed payload can produce.
 */
export function toMessageData(message: Message): DiscordMessageData | null {
  if (message.author === null) return null;
  const channel = message.channel;
  return {
    id: message.id,
    type: message.type,
    channelId: message.channelId,
    guildId: message.guildId,
    threadParentId: channel.isThread() ? channel.parentId : null,
    content: message.content,
    author: userData(message.author),
    webhookId: message.webhookId,
    mentions: [...message.mentions.users.values()].map(userData),
    attachments: [...message.attachments.values()].map((attachment) => ({
      id: attachment.id,
      url: attachment.url,
      name: attachment.name,
      contentType: attachment.contentType,
    })),
    isVoiceMessage: message.flags.has(MessageFlags.IsVoiceMessage),
    reference: referenceData(message),
  };
}

function referenceData(message: Message): DiscordMessageData['reference'] {
  const messageId = message.reference?.messageId;
  if (messageId === undefined) return null;
  // discord.js caches the payload's `referenced_message`, so the quoted message is usually at hand.
  const quoted = message.channel.messages.cache.get(messageId);
  return {
    messageId,
    authorId: quoted?.author?.id ?? message.mentions.repliedUser?.id ?? null,
    content: quoted?.content ?? null,
  };
}

export function userData(user: {
  id: string;
  username: string;
  globalName: string | null;
  bot: boolean;
}): DiscordUserData {
  return { id: user.id, username: user.username, globalName: user.globalName, bot: user.bot };
}
