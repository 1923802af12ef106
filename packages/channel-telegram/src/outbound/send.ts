import { type MessageCalls, abortableCall, attachmentName } from '@switchboard/channel-kit';
import type { Attachment } from '@switchboard/core';
import { type Api, GrammyError, InputFile } from 'grammy';
import { toChannelError } from '../errors.js';
import type { ApiSignal } from '../inbound/polling.js';
import { type SendMediaParams, type SendMessageParams, type TelegramPart, isTextPart } from './render.js';

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

/** The method that sends each type of attachment. */
const MEDIA_METHODS = { image: 'sendPhoto', file: 'sendDocument', audio: 'sendAudio' } as const;

/** A file as the Bot API takes it: uploaded (multipart) from `data`, or its URL, which Telegram fetches. */
function inputOf(attachment: Attachment): InputFile | string {
  if (attachment.data === undefined) return attachment.url as string;
  return new InputFile(Buffer.from(attachment.data, 'base64'), attachmentName(attachment));
}

/** Sends one attachment; resolves with the new message's id. */
async function sendMedia(api: Api, part: SendMediaParams, signal: AbortSignal): Promise<number> {
  const { chat_id, attachment, ...other } = part;
  const input = inputOf(attachment);
  const apiSignal = signal as ApiSignal;
  switch (MEDIA_METHODS[attachment.type]) {
    case 'sendPhoto':
      return (await api.sendPhoto(chat_id, input, other, apiSignal)).message_id;
    case 'sendAudio':
      return (await api.sendAudio(chat_id, input, other, apiSignal)).message_id;
    case 'sendDocument':
      return (await api.sendDocument(chat_id, input, other, apiSignal)).message_id;
  }
}

/**
 * The sendMessage, sendPhoto/sendDocument/sendAudio and editMessageText calls of one send (message ids as refs). Every Bot API call
 * that answers in a chat goes through here, so a pacer has one place to wait in (the client's
 * transformers). Rate limits (429 `retry_after`) and 5xx answers are retried by the client's
 * auto-retry transformer; what still fails becomes an SB_CHANNEL_* error.
 */
export function messageCalls(outbound: Outbound): MessageCalls<TelegramPart> {
  const { api, channelId, token, signal } = outbound;
  const call = <T>(method: string, run: () => Promise<T>) =>
    abortableCall(signal, run, (err) => toChannelError(err, { channelId, method, token }));
  return {
    post: (part) => {
      if (!isTextPart(part))
        return call(MEDIA_METHODS[part.attachment.type], async () =>
          String(await sendMedia(api, part, signal)),
        );
      const { chat_id, text, ...other } = part;
      return call('sendMessage', async () => {
        const message = await api.sendMessage(chat_id, text, other, signal as ApiSignal);
        return String(message.message_id);
      });
    },
    editable: isTextPart,
    edit: (part, ref) =>
      call('editMessageText', async () => {
        const { chat_id, text } = part as SendMessageParams;
        try {
          await api.editMessageText(chat_id, Number(ref), text, undefined, signal as ApiSignal);
        } catch (err) {
          if (!isNotModified(err)) throw err;
        }
      }),
  };
}
