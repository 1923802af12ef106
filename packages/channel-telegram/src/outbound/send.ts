import type { Api } from 'grammy';
import { toChannelError } from '../errors.js';
import type { SendMessageParams } from './render.js';

/**
 * Sends rendered messages one after the other, so that the chunks of a long reply arrive in
 * order. Rate limits (429 `retry_after`) and 5xx answers are retried by the client's auto-retry
 * transformer; what still fails becomes an SB_CHANNEL_* error and the remaining messages are
 * not sent.
 */
export async function sendMessages(
  api: Api,
  channelId: string,
  messages: readonly SendMessageParams[],
): Promise<void> {
  for (const { chat_id, text, ...other } of messages) {
    try {
      await api.sendMessage(chat_id, text, other);
    } catch (err) {
      throw toChannelError(err, { channelId, method: 'sendMessage' });
    }
  }
}
