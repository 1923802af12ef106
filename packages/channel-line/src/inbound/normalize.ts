import type { webhook } from '@line/bot-sdk';
import {
  type Element,
  type InboundMessage,
  type MediaType,
  parseInboundMessage,
  parseOrThrow,
} from '@switchboard/core';
import { z } from 'zod';

/** What the normalizer needs besides the event; passed in so that it stays pure. */
export interface NormalizeContext {
  /** The configured channel id (`channels[].id`). */
  channelId: string;
  /** The bot's user id (the webhook body's `destination`): a message from it is the bot's own. */
  botUserId?: string | undefined;
  /** The gateway id for the message (`newMessageId()`). */
  messageId: string;
  /** Milliseconds since the epoch. */
  receivedAt: number;
  /** `channels[].media.max_bytes`: a larger file is marked `too_large`. */
  maxMediaBytes: number;
}

/** A mentioned user (`isSelf`: the bot) or `@All`, in a text message's `mention.mentionees`. */
const MentioneeSchema = z.object({
  type: z.enum(['user', 'all']),
  userId: z.string().optional(),
  isSelf: z.boolean().optional(),
});

/** The fields of a message event the gateway reads (LINE's webhook event object). */
const MessageEventSchema = z.object({
  type: z.literal('message'),
  mode: z.enum(['active', 'standby'] satisfies webhook.EventMode[]),
  webhookEventId: z.string().min(1),
  timestamp: z.number(),
  replyToken: z.string().optional(),
  source: z.discriminatedUnion('type', [
    z.object({ type: z.literal('user'), userId: z.string().min(1) }),
    z.object({ type: z.literal('group'), groupId: z.string().min(1), userId: z.string().min(1).optional() }),
    z.object({ type: z.literal('room'), roomId: z.string().min(1), userId: z.string().min(1).optional() }),
  ]),
  message: z.looseObject({
    type: z.string(),
    id: z.string().min(1),
    text: z.string().optional(),
    fileName: z.string().optional(),
    fileSize: z.number().int().nonnegative().optional(),
    quotedMessageId: z.string().optional(),
    mention: z.object({ mentionees: z.array(MentioneeSchema) }).optional(),
  }),
});

/** A message event as the channel reads it; its `replyToken` and `timestamp` decide how to answer. */
export type LineMessageEvent = z.output<typeof MessageEventSchema>;

/** LINE's media message types, as element types; stickers and locations are not media. */
const MEDIA_TYPE_OF: Readonly<Record<string, MediaType>> = {
  image: 'image',
  // Audio messages are recorded in the chat: voice notes.
  audio: 'voice',
  video: 'video',
  file: 'file',
};

function mediaElement(message: LineMessageEvent['message'], maxBytes: number): Element | null {
  const type = MEDIA_TYPE_OF[message.type];
  if (type === undefined) return null;
  // Content is fetched from LINE by message id; the element keeps it as `file_id`. Only files
  // say their size up front.
  const size = message.fileSize;
  return {
    type,
    file_id: message.id,
    ...(message.fileName ? { name: message.fileName } : {}),
    ...(size === undefined ? {} : { size }),
    ...(size !== undefined && size > maxBytes ? { too_large: true as const } : {}),
  };
}

/**
 * Turns one LINE webhook event into an `InboundMessage`; `null` for what the gateway does not
 * answer: events other than messages, unsupported message kinds, and events in `standby` mode
 * (another channel of a module owns the chat and answers it). Throws SB_HTTP_BAD_REQUEST naming
 * the bad field of a malformed event. Pure.
 *
 * A one-to-one chat is keyed by the user, a group or room by its id. In groups the bot is
 * addressed when a mentionee `isSelf`, which admission reads as `mentions_bot`.
 * `platform_message_id` is LINE's message id (unique across chats); `raw` is the event.
 */
export function normalizeLineEvent(event: unknown, context: NormalizeContext): InboundMessage | null {
  const { type, mode } = (event ?? {}) as { type?: unknown; mode?: unknown };
  if (type !== 'message' || mode === 'standby') return null;
  const { source, message } = parseOrThrow(MessageEventSchema, event, 'SB_HTTP_BAD_REQUEST', 'line event');
  const text = message.type === 'text' ? (message.text ?? '') : '';
  const media = mediaElement(message, context.maxMediaBytes);
  if (message.type !== 'text' && media === null) return null;

  const mentionees = message.mention?.mentionees ?? [];
  const elements: Element[] = [
    ...(text === '' ? [] : [{ type: 'text' as const, text }]),
    // A user LINE may not identify (not a friend of the bot) is mentioned without a userId.
    ...mentionees.flatMap((mentionee) => {
      const userId = mentionee.type === 'all' ? 'all' : mentionee.userId;
      return userId === undefined
        ? []
        : [{ type: 'mention' as const, user_id: userId, is_bot_self: mentionee.isSelf === true }];
    }),
    ...(message.quotedMessageId === undefined
      ? []
      : [{ type: 'quote' as const, message_id: message.quotedMessageId }]),
    ...(media === null ? [] : [media]),
  ];
  const chatId =
    source.type === 'user' ? source.userId : source.type === 'group' ? source.groupId : source.roomId;
  return parseInboundMessage({
    id: context.messageId,
    platform: 'line',
    channel: context.channelId,
    chat: { type: source.type === 'user' ? 'person' : 'group', id: chatId },
    // LINE leaves userId out for a group member it may not identify (an old LINE app).
    sender: {
      id: source.userId ?? 'unknown',
      is_bot: source.userId !== undefined && source.userId === context.botUserId,
    },
    elements,
    text,
    mentions_bot: mentionees.some((mentionee) => mentionee.isSelf === true),
    platform_message_id: message.id,
    received_at: context.receivedAt,
    raw: event,
  });
}
