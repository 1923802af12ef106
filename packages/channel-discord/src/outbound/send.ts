import { type InboundMessage, type Reply, type SendPacer, pacedChatOf } from '@switchboard/core';
import { type REST, Routes } from 'discord.js';
import { toSendError } from '../errors.js';
import { renderReplies } from './render.js';

/**
 * Posts the replies to `origin` one message after the other, in order, each once `pacer` lets it
 * into the chat (off by default: discord.js keeps Discord's own buckets). `rest` queues requests
 * per rate-limit bucket and waits out 429s (Retry-After) itself, and retries 5xx and network
 * errors three times; what still fails becomes an SB_CHANNEL_* error without the token.
 * `signal` (the send's deadline) aborts the request in flight and its retries; the send then
 * rejects with `signal.reason`.
 */
export async function sendReplies(
  rest: REST,
  origin: InboundMessage,
  replies: readonly Reply[],
  token: string,
  pacer: SendPacer,
  signal: AbortSignal,
): Promise<void> {
  const chat = pacedChatOf(origin);
  for (const message of renderReplies(origin, replies)) {
    await pacer.pace(chat, signal);
    try {
      await rest.post(Routes.channelMessages(message.channelId), { body: message.body, signal });
    } catch (error) {
      // discord.js reports an aborted request as an AbortError; the deadline is the real cause.
      if (signal.aborted) throw signal.reason;
      throw toSendError(error, message.channelId, token);
    }
  }
}
