import { type Api, GrammyError } from 'grammy';
import { toChannelError } from '../errors.js';
import type { ApiSignal } from '../inbound/polling.js';
import type { SendMessageParams } from './render.js';

/**
 * Every Bot API call that answers in a chat goes through here, posts and edits alike (so a pacer
 * has one place to wait in). Rate limits (429 `retry_after`) and 5xx answers are retried by the
 * client's auto-retry transformer; what still fails becomes an SB_CHANNEL_* error. `signal` (the
 * send's deadline) aborts the call in flight and auto-retry's waits; the call then rejects with
 * `signal.reason`.
 */
async function outboundCall<T>(
  channelId: string,
  method: string,
  signal: AbortSignal,
  call: () => Promise<T>,
): Promise<T> {
  signal.throwIfAborted();
  try {
    return await call();
  } catch (err) {
    // grammY reports an aborted call as a network error; the deadline is the real cause.
    if (signal.aborted) throw signal.reason;
    throw toChannelError(err, { channelId, method });
  }
}

/** Telegram refuses an edit to the text a message already shows; for us it is done. */
function isNotModified(err: unknown): boolean {
  return err instanceof GrammyError && err.description.includes('message is not modified');
}

/** Posts one message; resolves with its message id. */
export function postMessage(
  api: Api,
  channelId: string,
  { chat_id, text, ...other }: SendMessageParams,
  signal: AbortSignal,
): Promise<number> {
  return outboundCall(channelId, 'sendMessage', signal, async () => {
    const message = await api.sendMessage(chat_id, text, other, signal as ApiSignal);
    return message.message_id;
  });
}

/** Sets the text of the bot's message `messageId` in the chat of `params`; an unchanged text succeeds. */
export function editMessage(
  api: Api,
  channelId: string,
  { chat_id, text }: SendMessageParams,
  messageId: number,
  signal: AbortSignal,
): Promise<void> {
  return outboundCall(channelId, 'editMessageText', signal, async () => {
    try {
      await api.editMessageText(chat_id, messageId, text, undefined, signal as ApiSignal);
    } catch (err) {
      if (!isNotModified(err)) throw err;
    }
  });
}

/**
 * Sends rendered messages one after the other, so that the chunks of a long reply arrive in
 * order; with `draft` (the preview of a streamed answer) the first one is an edit of that
 * message. A failure ends the send and the remaining messages are not sent.
 */
export async function sendMessages(
  api: Api,
  channelId: string,
  messages: readonly SendMessageParams[],
  signal: AbortSignal,
  draft?: number,
): Promise<void> {
  for (const [index, message] of messages.entries()) {
    if (index === 0 && draft !== undefined) await editMessage(api, channelId, message, draft, signal);
    else await postMessage(api, channelId, message, signal);
  }
}
