import type { Api } from 'grammy';
import { toChannelError } from '../errors.js';
import type { ApiSignal } from '../inbound/polling.js';
import type { SendMessageParams } from './render.js';

/**
 * Sends rendered messages one after the other, so that the chunks of a long reply arrive in
 * order. Rate limits (429 `retry_after`) and 5xx answers are retried by the client's auto-retry
 * transformer; what still fails becomes an SB_CHANNEL_* error and the remaining messages are
 * not sent. `signal` (the send's deadline) aborts the call in flight and auto-retry's waits;
 * the send then rejects with `signal.reason`.
 */
export async function sendMessages(
  api: Api,
  channelId: string,
  messages: readonly SendMessageParams[],
  signal: AbortSignal,
): Promise<void> {
  for (const { chat_id, text, ...other } of messages) {
    signal.throwIfAborted();
    try {
      await api.sendMessage(chat_id, text, other, signal as ApiSignal);
    } catch (err) {
      // grammY reports an aborted call as a network error; the deadline is the real cause.
      if (signal.aborted) throw signal.reason;
      throw toChannelError(err, { channelId, method: 'sendMessage' });
    }
  }
}
