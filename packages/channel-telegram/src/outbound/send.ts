import { type MessageCalls, abortableCall } from '@switchboard/channel-kit';
import { type Api, GrammyError } from 'grammy';
import { toChannelError } from '../errors.js';
import type { ApiSignal } from '../inbound/polling.js';
import type { SendMessageParams } from './render.js';

/** What one send or preview into a chat calls the Bot API with. */
export interface Outbound {
  api: Api;
  /** The configured channel id, for errors. */
  channelId: string;
  /** Kept out of every error. */
  token: string;
  /** The send's deadline: aborts the call in flight and auto-retry's waits. */
  signal: AbortSignal;
}

/** Telegram refuses an edit to the text a message already shows; for us it is done. */
function isNotModified(err: unknown): boolean {
  return err instanceof GrammyError && err.description.includes('message is not modified');
}

/**
 * The sendMessage and editMessageText calls of one send (message ids as refs). Every Bot API call
 * that answers in a chat goes through here, so a pacer has one place to wait in (the client's
 * transformers). Rate limits (429 `retry_after`) and 5xx answers are retried by the client's
 * auto-retry transformer; what still fails becomes an SB_CHANNEL_* error.
 */
export function messageCalls(outbound: Outbound): MessageCalls<SendMessageParams> {
  const { api, channelId, token, signal } = outbound;
  const call = <T>(method: string, run: () => Promise<T>) =>
    abortableCall(signal, run, (err) => toChannelError(err, { channelId, method, token }));
  return {
    post: ({ chat_id, text, ...other }) =>
      call('sendMessage', async () => {
        const message = await api.sendMessage(chat_id, text, other, signal as ApiSignal);
        return String(message.message_id);
      }),
    edit: ({ chat_id, text }, ref) =>
      call('editMessageText', async () => {
        try {
          await api.editMessageText(chat_id, Number(ref), text, undefined, signal as ApiSignal);
        } catch (err) {
          if (!isNotModified(err)) throw err;
        }
      }),
  };
}
