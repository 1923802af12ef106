import type { InboundMessage, Reply } from '@switchboard/core';
import { type REST, Routes } from 'discord.js';
import { toSendError } from '../errors.js';
import { type RenderedMessage, renderReplies } from './render.js';

/**
 * Makes one REST call that answers in a chat; every post and edit goes through here (so a pacer
 * has one place to wait in). `rest` queues requests per rate-limit bucket and waits out 429s
 * (Retry-After) itself, and retries 5xx and network errors three times; what still fails becomes
 * an SB_CHANNEL_* error without the token. `signal` (the send's deadline) aborts the request in
 * flight and its retries; the call then rejects with `signal.reason`.
 */
async function outboundCall<T>(
  channelId: string,
  token: string,
  signal: AbortSignal,
  call: () => Promise<T>,
): Promise<T> {
  signal.throwIfAborted();
  try {
    return await call();
  } catch (error) {
    // discord.js reports an aborted request as an AbortError; the deadline is the real cause.
    if (signal.aborted) throw signal.reason;
    throw toSendError(error, channelId, token);
  }
}

/** Posts one message; resolves with its id. */
export function postMessage(
  rest: REST,
  { channelId, body }: RenderedMessage,
  token: string,
  signal: AbortSignal,
): Promise<string> {
  return outboundCall(channelId, token, signal, async () => {
    const posted = (await rest.post(Routes.channelMessages(channelId), { body, signal })) as { id: string };
    return posted.id;
  });
}

/** Sets the content of the bot's message `messageId` (a message's reply reference cannot change). */
export async function editMessage(
  rest: REST,
  { channelId, body }: RenderedMessage,
  messageId: string,
  token: string,
  signal: AbortSignal,
): Promise<void> {
  const { content, allowed_mentions } = body;
  await outboundCall(channelId, token, signal, () =>
    rest.patch(Routes.channelMessage(channelId, messageId), { body: { content, allowed_mentions }, signal }),
  );
}

/**
 * Posts the replies to `origin` one message after the other, in order; with `draft` (the id of a
 * streamed answer's preview) the first one is an edit of that message.
 */
export async function sendReplies(
  rest: REST,
  origin: InboundMessage,
  replies: readonly Reply[],
  token: string,
  signal: AbortSignal,
  draft?: string,
): Promise<void> {
  for (const [index, message] of renderReplies(origin, replies).entries()) {
    if (index === 0 && draft !== undefined) await editMessage(rest, message, draft, token, signal);
    else await postMessage(rest, message, token, signal);
  }
}
