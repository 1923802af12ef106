import { type MessageCalls, retryKeyOf, splitReplies } from '@switchboard/channel-kit';
import { type InboundMessage, type Reply, type SendPacer, pacedChatOf } from '@switchboard/core';
import type { FeishuApi } from './open-api.js';

/**
 * Characters of one text message. Feishu caps a text message's request at 150 KB; 30 000 UTF-16
 * units stay under it even at 4 bytes each once escaped twice (the content is JSON in JSON).
 */
export const MAX_TEXT_CHARS = 30_000;

/** One text message of a reply, and the idempotency key Feishu deduplicates a re-sent part by. */
export interface FeishuText {
  text: string;
  uuid?: string;
}

/**
 * The texts of `replies` in Feishu's limit. With `answering` (the turn, else the message answered)
 * each carries a `uuid` made of it, its place and its text, so that a re-sent part shows once.
 */
export function renderFeishuReplies(replies: readonly Reply[], answering?: string): FeishuText[] {
  return splitReplies(replies, MAX_TEXT_CHARS).map(({ text }, index) => ({
    text,
    ...(answering === undefined ? {} : { uuid: retryKeyOf(answering, index, [text]) }),
  }));
}

/**
 * Replies to `origin` (a reply to a message in a topic lands in the topic: the queued origin keeps
 * no platform event to tell) and edits the bot's text messages, paced per chat.
 */
export function feishuMessageCalls(
  origin: InboundMessage,
  options: { api: FeishuApi; pacer: SendPacer; signal: AbortSignal },
): MessageCalls<FeishuText> {
  const { api, pacer, signal } = options;
  const chat = pacedChatOf(origin);
  const messageUrl = (id: string) => `/open-apis/im/v1/messages/${encodeURIComponent(id)}`;
  const content = (text: string) => JSON.stringify({ text });
  return {
    async post({ text, uuid }) {
      await pacer.pace(chat, signal);
      const answer = await api.call<{ data?: { message_id?: string } }>(
        'im.message.reply',
        {
          method: 'POST',
          url: `${messageUrl(origin.platform_message_id)}/reply`,
          data: { msg_type: 'text', content: content(text), uuid },
        },
        signal,
      );
      return answer.data?.message_id ?? '';
    },
    async edit({ text }, ref) {
      await pacer.pace(chat, signal);
      await api.call(
        'im.message.update',
        { method: 'PUT', url: messageUrl(ref), data: { msg_type: 'text', content: content(text) } },
        signal,
      );
    },
  };
}
