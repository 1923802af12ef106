import type { InboundMessage, Reply } from '@switchboard/core';
import { type REST, Routes } from 'discord.js';
import { toSendError } from '../errors.js';
import { renderReplies } from './render.js';

/**
 * Posts the replies to `origin` one message after the other, in order. `rest` queues requests
 * per rate-limit bucket and waits out 429s (Retry-After) itself, and retries 5xx and network
 * errors three times; what still fails becomes an SB_CHANNEL_* error without the token.
 */
export async function sendReplies(
  rest: REST,
  origin: InboundMessage,
  replies: readonly Reply[],
  token: string,
): Promise<void> {
  for (const message of renderReplies(origin, replies)) {
    try {
      await rest.post(Routes.channelMessages(message.channelId), { body: message.body });
    } catch (error) {
      throw toSendError(error, message.channelId, token);
    }
  }
}
