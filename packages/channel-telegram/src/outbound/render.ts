import type { InboundMessage, Reply } from '@switchboard/core';

/** Telegram's limit for one message's text, in UTF-16 code units (the Bot API's "characters"). */
export const TELEGRAM_TEXT_LIMIT = 4096;

/** The sendMessage parameters the channel uses. */
export interface SendMessageParams {
  chat_id: number | string;
  text: string;
  message_thread_id?: number;
  reply_parameters?: { message_id: number; allow_sending_without_reply: boolean };
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

/**
 * Cuts `text` into pieces of at most `limit` code units, in order. Prefers the last newline,
 * then the last space, in the second half of each window (the separator is dropped); otherwise
 * cuts hard, but never inside a surrogate pair, so that no emoji is broken in two.
 */
export function splitText(text: string, limit: number = TELEGRAM_TEXT_LIMIT): string[] {
  const chunks: string[] = [];
  let rest = text;
  while (rest.length > limit) {
    const window = rest.slice(0, limit + 1);
    const half = Math.max(1, Math.floor(limit / 2));
    const newline = window.lastIndexOf('\n', limit);
    const space = window.lastIndexOf(' ', limit);
    const separator = newline >= half ? newline : space >= half ? space : -1;
    if (separator >= 0) {
      chunks.push(rest.slice(0, separator));
      rest = rest.slice(separator + 1);
    } else {
      const cut = isHighSurrogate(rest.charCodeAt(limit - 1)) ? limit - 1 : limit;
      chunks.push(rest.slice(0, cut));
      rest = rest.slice(cut);
    }
  }
  if (rest.length > 0) chunks.push(rest);
  return chunks;
}

/** Telegram chat ids are integers; `@channelname` ids stay strings. */
function chatIdOf(id: string): number | string {
  return /^-?\d+$/.test(id) ? Number(id) : id;
}

/** The message id part of `<chat id>:<message id>`. */
function messageIdOf(platformMessageId: string): number | undefined {
  const id = Number(platformMessageId.slice(platformMessageId.lastIndexOf(':') + 1));
  return Number.isSafeInteger(id) ? id : undefined;
}

/**
 * Replies → sendMessage calls, in order (pure). Every message goes to the origin's chat and
 * forum topic; the first one answers the origin message (still sent if that was deleted). Long
 * texts are split at Telegram's limit; empty ones are skipped because Telegram refuses them.
 */
export function renderReplies(origin: InboundMessage, replies: readonly Reply[]): SendMessageParams[] {
  const chat_id = chatIdOf(origin.chat.id);
  const thread = origin.chat.thread === undefined ? {} : { message_thread_id: Number(origin.chat.thread) };
  const replyTo = messageIdOf(origin.platform_message_id);
  const texts = replies.filter((reply) => reply.text.trim() !== '').flatMap((reply) => splitText(reply.text));
  return texts.map((text, index) => ({
    chat_id,
    text,
    ...thread,
    ...(index === 0 && replyTo !== undefined
      ? { reply_parameters: { message_id: replyTo, allow_sending_without_reply: true } }
      : {}),
  }));
}
