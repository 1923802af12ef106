import { webApi } from '@slack/bolt';
import { type MessageCalls, attachmentFile } from '@switchboard/channel-kit';
import { type BackoffPolicy, type Logger, pause, retryDelayMs } from '@switchboard/core';
import { failureOf, toChannelError } from '../errors.js';
import {
  type AssistantThread,
  type SlackFileUpload,
  type SlackPart,
  type SlackPostMessage,
  isMessagePart,
} from './render.js';

export interface SendOptions {
  /** A client from `createSendClient` for this send. */
  client: webApi.WebClient;
  botToken: string;
  /** The configured channel id, for error messages. */
  channelId: string;
  /** `outbound.allow_private_urls`: whether a url attachment may lead to a private address. */
  allowPrivateUrls: boolean;
  /** How many times one message is retried after a 429. */
  maxRateLimitRetries: number;
  /** A longer Retry-After than this is not waited for: the error goes to the caller. */
  maxRateLimitWaitMs: number;
  /** How many times one message is retried after a network failure or a 5xx. */
  maxTransientRetries: number;
  /** The waits between those retries. */
  transientRetry: BackoffPolicy;
  /** Told of each 429 Slack answered, with its Retry-After in ms. */
  onRateLimited: (retryAfterMs: number) => void;
  /** The send's deadline: aborts the request in flight and any wait. */
  signal: AbortSignal;
  logger: Logger;
}

/**
 * Whether a request posts into the chat, and so counts against its rate: a message, an update, or
 * the completion that shares an uploaded file. Asking for an upload URL and the upload itself post
 * nothing, so a file costs one token, like a message.
 */
function postsIntoChat(url: string): boolean {
  return /\/(chat\.postMessage|chat\.update|files\.completeUploadExternal)$/.test(new URL(url).pathname);
}

/**
 * A Web API client for one send into `chat`, every request of which `signal` aborts. Bolt's
 * WebClient takes no signal per call, so the send's signal is given to each request in its
 * `fetch`. Its own retries are off: they wait on timers no signal reaches, so a run of 5xx
 * answers could outlast the deadline; `outboundCall` retries instead, with waits that end
 * with the signal. Each request that posts into the chat (`postsIntoChat`), a retry too, first
 * waits for `pacer` (the channel's token buckets, shared by posts and edits) in `fetch`, right
 * before it leaves: pacing any earlier lets the client's own delays bunch requests up on their
 * way to Slack.
 */
export function createSendClient(options: {
  slackApiUrl: string | undefined;
  logger: webApi.WebClientOptions['logger'];
  /** Waits until the request may leave: the pacer's wait for a send, nothing for a typing status. */
  pace: () => Promise<unknown>;
  signal: AbortSignal;
}): webApi.WebClient {
  const { signal, pace } = options;
  return new webApi.WebClient(undefined, {
    ...(options.slackApiUrl === undefined ? {} : { slackApiUrl: options.slackApiUrl }),
    logger: options.logger,
    // A 429 comes back as WebAPIRateLimitedError with its Retry-After, which `outboundCall`
    // waits out; the client's own wait would not end with the deadline.
    rejectRateLimitedCalls: true,
    retryConfig: { retries: 0 },
    // Without a `timeout` the client gives its requests no signal of its own: the send's is theirs.
    fetch: async (url, init) => {
      if (postsIntoChat(String(url))) await pace();
      return fetch(url, { ...init, signal });
    },
  });
}

/**
 * Makes one Web API call that answers in a chat; every post and update goes through here, paced
 * by the client (`createSendClient`). A 429 the pacing did not avoid is waited out (Retry-After)
 * and the call repeated, up to `maxRateLimitRetries` times; network failures and 5xx are retried
 * with backoff up to `maxTransientRetries` times; anything else, or a failure that outlasts those
 * retries, is an SB_CHANNEL_* error. When `signal` aborts, the request in flight or the wait is
 * cut short and the call rejects with `signal.reason`.
 */
async function outboundCall<T>(method: string, call: () => Promise<T>, options: SendOptions): Promise<T> {
  const { signal } = options;
  let rateLimited = 0;
  let transient = 0;
  for (;;) {
    signal.throwIfAborted();
    try {
      return await call();
    } catch (error) {
      // An aborted request surfaces as a network error; the deadline is the real cause.
      if (signal.aborted) throw signal.reason;
      const { status, network, retryAfterMs } = failureOf(error);
      let waitMs: number | undefined;
      if (status === 429 && retryAfterMs !== undefined) {
        rateLimited += 1;
        options.onRateLimited(retryAfterMs);
        if (rateLimited <= options.maxRateLimitRetries && retryAfterMs <= options.maxRateLimitWaitMs) {
          waitMs = retryAfterMs;
        }
      } else if (network !== undefined || (status !== undefined && status >= 500)) {
        transient += 1;
        if (transient <= options.maxTransientRetries)
          waitMs = retryDelayMs(transient, options.transientRetry);
      }
      if (waitMs === undefined) {
        throw toChannelError(error, { channelId: options.channelId, method, token: options.botToken });
      }
      options.logger.warn({ method, waitMs, rateLimited, transient }, 'send failed, retrying');
      await pause(waitMs, signal);
      signal.throwIfAborted();
    }
  }
}

/**
 * Uploads and shares one file (`files.uploadV2`: files.getUploadURLExternal, the upload, then
 * files.completeUploadExternal); resolves with its file id. A url is fetched by the gateway first
 * (`attachmentFile`: bounded), as Slack takes only uploads. A failed step fails the whole call,
 * which `outboundCall` makes again from the start: a file uploaded but never completed is not
 * shared, so a retry shows it once.
 */
async function uploadFile(part: SlackFileUpload, options: SendOptions): Promise<string> {
  const { client, botToken: token, signal, channelId, allowPrivateUrls } = options;
  const file = await attachmentFile(part.attachment, { signal, channelId, allowPrivateUrls });
  return outboundCall(
    'files.uploadV2',
    async () => {
      const upload = { token, channel_id: part.channel, file: file.bytes, filename: file.name };
      const result = await client.filesUploadV2(
        part.thread_ts === undefined ? upload : { ...upload, thread_ts: part.thread_ts },
      );
      const completed = result.files[0] as { files?: Array<{ id?: string }> } | undefined;
      return completed?.files?.[0]?.id ?? '';
    },
    options,
  );
}

/**
 * The `chat.postMessage`, `files.uploadV2` and `chat.update` calls of one send (`ts` as refs of
 * messages), each made through `outboundCall`.
 */
export function messageCalls(options: SendOptions): MessageCalls<SlackPart> {
  const { client, botToken: token } = options;
  return {
    post: (part) => {
      if (!isMessagePart(part)) return uploadFile(part, options);
      return outboundCall(
        'chat.postMessage',
        async () => (await client.chat.postMessage({ token, ...part })).ts ?? '',
        options,
      );
    },
    editable: isMessagePart,
    edit: async (part, ts) => {
      const { channel, text } = part as SlackPostMessage;
      await outboundCall('chat.update', () => client.chat.update({ token, channel, ts, text }), options);
    },
  };
}

/**
 * Shows the bot typing in an assistant thread (`assistant.threads.setStatus`); Slack clears the
 * status when the app replies in the thread. Made once, never retried: the next signal is the retry.
 */
export async function setTypingStatus(options: SendOptions, thread: AssistantThread): Promise<void> {
  const { client, botToken: token, signal } = options;
  signal.throwIfAborted();
  try {
    await client.assistant.threads.setStatus({ token, ...thread, status: 'is typing...' });
  } catch (error) {
    if (signal.aborted) throw signal.reason;
    throw toChannelError(error, {
      channelId: options.channelId,
      method: 'assistant.threads.setStatus',
      token,
    });
  }
}
