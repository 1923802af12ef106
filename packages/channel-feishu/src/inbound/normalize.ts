import {
  type Element,
  type InboundMessage,
  SwitchboardError,
  parseInboundMessage,
  parseOrThrow,
} from '@switchboard/core';
import { z } from 'zod';

/** What the normalizer needs besides the event; passed in so that it stays pure. */
export interface NormalizeContext {
  /** The configured channel id (`channels[].id`). */
  channelId: string;
  /** The bot's open_id: mentions of it set `mentions_bot`, its own messages are `is_bot`. */
  botOpenId: string;
  /** The gateway id for the message (`newMessageId()`). */
  messageId: string;
  /** Milliseconds since the epoch. */
  receivedAt: number;
}

/** A mention placeholder in a message's text: `@_user_1`, or `@_all` for everyone in the chat. */
const MENTION_KEY = /^@_user_\d{1,4}$/;
const ALL_KEY = '@_all';
const MENTION_PLACEHOLDERS = /(?:@_user_\d{1,4}|@_all)(?!\w)/g;
// A message carries a bounded number of mentions; more are not read (they would only cost time).
const MAX_MENTIONS = 50;

const UserIdSchema = z.object({ open_id: z.string().min(1) });

/** One entry of `message.mentions`, read on its own: a malformed one is skipped, not the message. */
const MentionSchema = z.object({
  key: z.string(),
  id: z.object({ open_id: z.string().optional() }).optional(),
  name: z.string().optional(),
});

/** The `event` of an `im.message.receive_v1` (schema 2.0), the fields the gateway reads. */
const MessageEventSchema = z.object({
  sender: z.object({ sender_id: UserIdSchema, sender_type: z.string().optional() }),
  message: z.object({
    message_id: z.string().min(1),
    root_id: z.string().optional(),
    parent_id: z.string().optional(),
    thread_id: z.string().optional(),
    chat_id: z.string().min(1),
    chat_type: z.string(),
    message_type: z.string(),
    content: z.string(),
    mentions: z.array(z.unknown()).optional(),
  }),
});

/** A mention as the gateway reads it: `user_id` is `all` for `@_all`. */
interface Mention {
  key: string;
  userId: string;
  name?: string;
}

/**
 * The first 50 mentions that are well formed: a key that is a placeholder (`@_user_N`) with an
 * open_id, or `@_all` (everyone, `user_id: 'all'`, as the other channels name it).
 */
function mentionsOf(entries: readonly unknown[]): Mention[] {
  return entries.slice(0, MAX_MENTIONS).flatMap((entry) => {
    const parsed = MentionSchema.safeParse(entry);
    if (!parsed.success) return [];
    const { key, id, name } = parsed.data;
    const named = name === undefined || name === '' ? {} : { name };
    if (key === ALL_KEY) return [{ key, userId: 'all', ...named }];
    const openId = id?.open_id ?? '';
    return MENTION_KEY.test(key) && openId !== '' ? [{ key, userId: openId, ...named }] : [];
  });
}

/** `message.content`: JSON of an object whose fields depend on `message_type`. */
const ContentSchema = z.record(z.string(), z.unknown());

/** A message event as the channel reads it; its `message` decides where the answer goes. */
export type FeishuMessageEvent = z.output<typeof MessageEventSchema>;

/** The text of a `text` message, or of a `post` (rich text: its title and text runs). */
function textOf(type: string, content: Record<string, unknown>): string {
  if (type === 'text') return typeof content.text === 'string' ? content.text : '';
  const title = typeof content.title === 'string' ? [content.title] : [];
  const lines = Array.isArray(content.content) ? (content.content as unknown[]) : [];
  const runs = lines.map((line) =>
    (Array.isArray(line) ? (line as unknown[]) : [])
      .map((run) => {
        const text = typeof run === 'object' && run !== null ? (run as { text?: unknown }).text : undefined;
        return typeof text === 'string' ? text : '';
      })
      .join(''),
  );
  return [...title, ...runs].filter((line) => line !== '').join('\n');
}

/** Images, files, voice notes and videos (`media`), fetched later by key (`file_id`). */
function mediaOf(type: string, content: Record<string, unknown>): Element | null {
  const key = (name: string) => (typeof content[name] === 'string' ? (content[name] as string) : '');
  if (type === 'image') return { type: 'image', file_id: key('image_key') };
  if (type === 'audio') return { type: 'voice', file_id: key('file_key') };
  if (type === 'file') return { type: 'file', file_id: key('file_key'), name: key('file_name') };
  if (type === 'media') return { type: 'video', file_id: key('file_key'), name: key('file_name') };
  return null;
}

/**
 * Turns the `event` of an `im.message.receive_v1` into an `InboundMessage`; `null` for message
 * kinds the gateway does not read (stickers, cards, shares…). Throws SB_HTTP_BAD_REQUEST naming
 * the bad field of a malformed event (content that is not a JSON object, no sender or chat); a
 * malformed mention is skipped, and mentions past 50 are not read. Pure.
 *
 * `p2p` chats are `person`, group chats `group`, keyed by `chat_id`; a topic (`thread_id`, else
 * the reply chain's `root_id`) is the thread. Mention placeholders (`@_user_1`) read as `@name`;
 * a mention of the bot's open_id sets `mentions_bot`. `raw` is the event.
 */
export function normalizeFeishuEvent(event: unknown, context: NormalizeContext): InboundMessage | null {
  const { sender, message } = parseOrThrow(MessageEventSchema, event, 'SB_HTTP_BAD_REQUEST', 'feishu event');
  let parsed: unknown;
  try {
    parsed = JSON.parse(message.content);
  } catch {
    throw new SwitchboardError('SB_HTTP_BAD_REQUEST', {
      message: 'feishu event: message.content: not JSON',
    });
  }
  const content = parseOrThrow(ContentSchema, parsed, 'SB_HTTP_BAD_REQUEST', 'feishu event message.content');
  const media = mediaOf(message.message_type, content);
  if (message.message_type !== 'text' && message.message_type !== 'post' && media === null) return null;

  const mentions = mentionsOf(message.mentions ?? []);
  const names = new Map(mentions.map((mention) => [mention.key, `@${mention.name ?? mention.userId}`]));
  // One pass over the text: a name that looks like a placeholder is not replaced again.
  const text = (media === null ? textOf(message.message_type, content) : '').replace(
    MENTION_PLACEHOLDERS,
    (key) => names.get(key) ?? key,
  );
  const elements: Element[] = [
    ...(text === '' ? [] : [{ type: 'text' as const, text }]),
    ...mentions.map((mention) => ({
      type: 'mention' as const,
      user_id: mention.userId,
      ...(mention.name === undefined ? {} : { name: mention.name }),
      is_bot_self: mention.userId === context.botOpenId,
    })),
    ...(message.parent_id ? [{ type: 'quote' as const, message_id: message.parent_id }] : []),
    ...(media === null ? [] : [media]),
  ];
  const thread = message.thread_id || message.root_id;
  const senderId = sender.sender_id.open_id;
  return parseInboundMessage({
    id: context.messageId,
    platform: 'feishu',
    channel: context.channelId,
    chat: {
      type: message.chat_type === 'p2p' ? 'person' : 'group',
      id: message.chat_id,
      ...(thread ? { thread } : {}),
    },
    sender: { id: senderId, is_bot: sender.sender_type === 'app' || senderId === context.botOpenId },
    elements,
    text,
    mentions_bot: mentions.some((mention) => mention.userId === context.botOpenId),
    platform_message_id: message.message_id,
    received_at: context.receivedAt,
    raw: event,
  });
}
