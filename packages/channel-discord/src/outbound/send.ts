import type { InboundMessage, PacedChat, Reply, SendPacer } from '@switchboard/core';
import { type REST, Routes } from 'discord.js';
import { toSendError } from '../errors.js';
import { type RenderedMessage, renderReplies } from './render.js';

/** What one send or preview into a chat calls Discord with. */
export interface Outbound {
  rest: REST;
  token: string;
  /** The channel's token buckets (off by default: discord.js keeps Discord's own buckets). */
  pacer: SendPacer;
  /** The chat the calls go to, as the pacer counts it. */
  chat: PacedChat;
  /** The send's deadline: aborts the pacing wait, the request in flight and its retries. */
  signal: AbortSignal;
}

/**
 * Makes one REST call that answers in a chat; every post and edit goes through here, once `pacer`
 * lets it into the chat (posts and edits share its buckets). `rest` queues requests per
 * rate-limit bucket and waits out 429s (Retry-After) itself, and retries 5xx and network errors
 * three times; what still fails becomes an SB_CHANNEL_* error without the token. `signal` (the
 * send's deadline) aborts the pacing wait, the request in flight and its retries; the call then
 * rejects with `signal.reason`.
 */
async function outboundCall<T>(channelId: string, outbound: Outbound, call: () => Promise<T>): Promise<T> {
  const { signal } = outbound;
  signal.throwIfAborted();
  await outbound.pacer.pace(outbound.chat, signal);
  try {
    return await call();
  } catch (error) {
    // discord.js reports an aborted request as an AbortError; the deadline is the real cause.
    if (signal.aborted) throw signal.reason;
    throw toSendError(error, channelId, outbound.token);
  }
}

/** Posts one message; resolves with its id. */
export function postMessage({ channelId, body }: RenderedMessage, outbound: Outbound): Promise<string> {
  const { rest, signal } = outbound;
  return outboundCall(channelId, outbound, async () => {
    const posted = (await rest.post(Routes.channelMessages(channelId), { body, signal })) as { id: string };
    return posted.id;
  });
}

/** Sets the content of the bot's message `messageId` (a message's reply reference cannot change). */
export async function editMessage(
  { channelId, body }: RenderedMessage,
  messageId: string,
  outbound: Outbound,
): Promise<void> {
  const { rest, signal } = outbound;
  const { content, allowed_mentions } = body;
  await outboundCall(channelId, outbound, () =>
    rest.patch(Routes.channelMessage(channelId, messageId), { body: { content, allowed_mentions }, signal }),
  );
}

/**
 * Posts the replies to `origin` one message after the other, in order; with `draft` (the id of a
 * streamed answer's preview) the first one is an edit of that message.
 */
export async function sendReplies(
  origin: InboundMessage,
  replies: readonly Reply[],
  outbound: Outbound,
  draft?: string,
): Promise<void> {
  for (const [index, message] of renderReplies(origin, replies).entries()) {
    if (index === 0 && draft !== undefined) await editMessage(message, draft, outbound);
    else await postMessage(message, outbound);
  }
}
