import { splitRepliesWithAttachments } from '@switchboard/channel-kit';
import type { Attachment, InboundMessage, Reply } from '@switchboard/core';

/** Telegram's limit for one message's text, in UTF-16 code units (the Bot API's "characters"). */
export const TELEGRAM_TEXT_LIMIT = 4096;

/** The sendMessage parameters the channel uses. */
export interface SendMessageParams {
  chat_id: number | string;
  text: string;
  message_thread_id?: number;
  reply_parameters?: { message_id: number; allow_sending_without_reply: boolean };
}

/** A sendPhoto, sendDocument or sendAudio call (by the attachment's type) the channel makes. */
export interface SendMediaParams {
  chat_id: number | string;
  attachment: Attachment;
  message_thread_id?: number;
  reply_parameters?: { message_id: number; allow_sending_without_reply: boolean };
}

/** One Bot API call of a send: a text message or a file. */
export type TelegramPart = SendMessageParams | SendMediaParams;

/** Telegram chat ids are integers; `@channelname` ids stay strings. */
function chatIdOf(id: string): number | string {
  return /^-?\d+$/.test(id) ? Number(id) : id;
}

/** The sendChatAction parameters of a typing signal in the chat (and forum topic) of `origin`. */
export function renderTyping(origin: InboundMessage): {
  chat_id: number | string;
  message_thread_id?: number;
} {
  const chat_id = chatIdOf(origin.chat.id);
  return origin.chat.thread === undefined
    ? { chat_id }
    : { chat_id, message_thread_id: Number(origin.chat.thread) };
}

/** The message id part of `<chat id>:<message id>`. */
function messageIdOf(platformMessageId: string): number | undefined {
  const id = Number(platformMessageId.slice(platformMessageId.lastIndexOf(':') + 1));
  return Number.isSafeInteger(id) ? id : undefined;
}

/**
 * Replies → sendMessage, sendPhoto, sendDocument and sendAudio calls, in order (pure): each
 * reply's attachments as it lists them, then its text. Every message goes to the origin's chat
 * and forum topic; the first one answers the origin message, or the message an event is about
 * (still sent if that was deleted). Long texts are split at Telegram's limit; empty ones are
 * skipped because Telegram refuses them.
 */
export function renderReplies(origin: InboundMessage, replies: readonly Reply[]): TelegramPart[] {
  const chat_id = chatIdOf(origin.chat.id);
  const thread = origin.chat.thread === undefined ? {} : { message_thread_id: Number(origin.chat.thread) };
  // An event's own id names the event; the reply answers the message it is about.
  const replyTo = messageIdOf(origin.event?.message_id ?? origin.platform_message_id);
  return splitRepliesWithAttachments(replies, TELEGRAM_TEXT_LIMIT).map((part, index) => ({
    chat_id,
    ...('text' in part ? { text: part.text } : { attachment: part.attachment }),
    ...thread,
    ...(index === 0 && replyTo !== undefined
      ? { reply_parameters: { message_id: replyTo, allow_sending_without_reply: true } }
      : {}),
  }));
}

/** Whether `part` is a text message (which a streamed preview can become), not a file. */
export function isTextPart(part: TelegramPart): part is SendMessageParams {
  return 'text' in part;
}
