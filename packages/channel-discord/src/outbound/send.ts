import {
  type AttachmentFile,
  type MessageCalls,
  abortableCall,
  attachmentFile,
} from '@switchboard/channel-kit';
import type { PacedChat, SendPacer } from '@switchboard/core';
import { type REST, Routes } from 'discord.js';
import { toSendError } from '../errors.js';
import type { DiscordMessageBody, RenderedMessage } from './render.js';

/** What one send or preview into a chat calls Discord with. */
export interface Outbound {
  rest: REST;
  /** The configured channel's id (`channels[].id`), for errors. */
  channel: string;
  /** Kept out of every error. */
  token: string;
  /** `outbound.allow_private_urls`: whether a url attachment may lead to a private address. */
  allowPrivateUrls: boolean;
  /** The channel's token buckets (off by default: discord.js keeps Discord's own buckets). */
  pacer: SendPacer;
  /** The chat the calls go to, as the pacer counts it. */
  chat: PacedChat;
  /** The send's deadline: aborts the pacing wait, the request in flight and its retries. */
  signal: AbortSignal;
}

/**
 * A message with a file as Discord takes it (`payload_json` and `files[0]`), encoded to bytes
 * here: discord.js would hand its FormData to whichever undici is the process's global
 * dispatcher, and one of another version than its own cannot read it (the request fails with
 * "action is not a function"). Bytes pass through any of them.
 */
async function multipartRequest(body: DiscordMessageBody, file: AttachmentFile) {
  const form = new FormData();
  form.append('payload_json', JSON.stringify(body));
  form.append(
    'files[0]',
    new Blob([file.bytes], file.mimeType === undefined ? {} : { type: file.mimeType }),
    file.name,
  );
  const encoded = new Response(form);
  return {
    body: Buffer.from(await encoded.arrayBuffer()),
    passThroughBody: true,
    headers: { 'Content-Type': encoded.headers.get('content-type') ?? '' },
  };
}

/**
 * The message posts (a file as a multipart upload) and edits of one send (message ids as refs). Every REST call that answers in
 * a chat goes through here, once `pacer` lets it into the chat (posts and edits share its
 * buckets). `rest` queues requests per rate-limit bucket and waits out 429s (Retry-After) itself,
 * and retries 5xx and network errors three times; what still fails becomes an SB_CHANNEL_* error
 * without the token.
 */
export function messageCalls(outbound: Outbound): MessageCalls<RenderedMessage> {
  const { rest, signal } = outbound;
  async function call<T>(route: string, run: () => Promise<T>): Promise<T> {
    signal.throwIfAborted();
    await outbound.pacer.pace(outbound.chat, signal);
    const failure = (error: unknown) =>
      toSendError(error, { channelId: outbound.channel, call: route, token: outbound.token });
    return abortableCall(signal, run, failure);
  }
  return {
    post: async ({ channelId, body, attachment }) => {
      const route = Routes.channelMessages(channelId);
      // A url is fetched by the gateway (bounded) and uploaded: Discord takes no file by URL.
      const request =
        attachment === undefined
          ? { body }
          : await multipartRequest(
              body,
              await attachmentFile(attachment, {
                signal,
                channelId: outbound.channel,
                allowPrivateUrls: outbound.allowPrivateUrls,
              }),
            );
      return call(
        `POST ${route}`,
        async () => ((await rest.post(route, { ...request, signal })) as { id: string }).id,
      );
    },
    editable: (message) => message.attachment === undefined,
    // A message's reply reference cannot change: an edit sets its content alone.
    edit: async ({ channelId, body: { content, allowed_mentions } }, messageId) => {
      const route = Routes.channelMessage(channelId, messageId);
      await call(`PATCH ${route}`, () => rest.patch(route, { body: { content, allowed_mentions }, signal }));
    },
  };
}

/**
 * One typing signal in the chat of `outbound` (`POST /channels/{id}/typing`: Discord shows it
 * for 10 s, or until the bot posts). Made only when the pacer has a token free now; discord.js
 * queues it in the typing route's own bucket, apart from the message posts.
 */
export async function sendTyping(outbound: Outbound, channelId: string): Promise<void> {
  const { rest, signal } = outbound;
  signal.throwIfAborted();
  if (!(await outbound.pacer.tryPace())) return;
  const route = Routes.channelTyping(channelId);
  await abortableCall(
    signal,
    () => rest.post(route, { signal }),
    (error: unknown) =>
      toSendError(error, { channelId: outbound.channel, call: `POST ${route}`, token: outbound.token }),
  );
}
