import * as lark from '@larksuiteoapi/node-sdk';
import {
  type MessageCalls,
  type PlatformFailure,
  abortableCall,
  channelFailure,
  networkReasonOf,
  retryAfterMs,
  retryKeyOf,
  splitReplies,
} from '@switchboard/channel-kit';
import type { InboundMessage, Logger, Reply, SendPacer } from '@switchboard/core';
import { pacedChatOf } from '@switchboard/core';
import axios from 'axios';
import type { FeishuChannelConfig } from '../options.js';

/**
 * Characters of one text message. Feishu caps a text message's request at 150 KB; 30 000 UTF-16
 * units stay under it even at 4 bytes each once escaped twice (the content is JSON in JSON).
 */
export const MAX_TEXT_CHARS = 30_000;

/** Open platform codes: frequency limits (app-wide, per chat) and refused or expired tokens. */
const RATE_LIMIT_CODES = new Set([99991400, 230020]);
const AUTH_CODES = new Set([99991661, 99991663, 99991668, 99991672, 10003, 10014]);

/** One text message of a reply, and the idempotency key Feishu deduplicates a re-sent part by. */
export interface FeishuText {
  text: string;
  uuid?: string;
}

/** An open platform answer: `code` 0 is success, even on HTTP 200. */
interface OpenApiAnswer {
  code?: number;
  msg?: string;
  data?: { message_id?: string };
}

/** How a call failed, from an HTTP error, a non-zero `code`, or the SDK's token fetch. */
function failureOf(error: unknown): PlatformFailure {
  if (axios.isAxiosError(error)) {
    if (error.response === undefined) return { network: networkReasonOf(error) };
    const { status, headers } = error.response;
    const data = (error.response.data ?? {}) as OpenApiAnswer;
    return { status, ...codeFailure(data), retryAfterMs: retryAfterMs(headers['x-ogw-ratelimit-reset']) };
  }
  const said = error instanceof Error ? error.message : String(error);
  // The SDK's own words when the token endpoint answered without a token: only its code and msg.
  if (said.startsWith('failed to get tenant_access_token')) return { kind: 'auth', description: said };
  return { description: said };
}

function codeFailure(answer: OpenApiAnswer): PlatformFailure {
  const { code, msg } = answer;
  const kind =
    code === undefined
      ? undefined
      : RATE_LIMIT_CODES.has(code)
        ? 'rate_limited'
        : AUTH_CODES.has(code)
          ? 'auth'
          : undefined;
  return { code, description: msg, ...(kind === undefined ? {} : { kind }) };
}

/** A non-zero `code` in a 2xx answer, thrown as the failure it is. */
class OpenApiRefusal extends Error {
  constructor(readonly answer: OpenApiAnswer) {
    super(answer.msg ?? `code ${answer.code}`);
  }
}

/** The SDK's log lines, strings only: its error objects hold request headers and bodies. */
function sdkLogger(logger: Logger) {
  const line = (...args: unknown[]) => {
    const said = args.filter((arg) => typeof arg === 'string').join(' ');
    if (said !== '') logger.debug({ sdk: said }, 'lark sdk');
  };
  return { error: line, warn: line, info: line, debug: line, trace: line };
}

/**
 * The SDK client of a channel: its own token cache (the SDK's default is shared by every client
 * of the process) and an HTTP instance whose requests end after `sendTimeoutMs`.
 */
export function createFeishuClient(config: FeishuChannelConfig, logger: Logger): lark.Client {
  const http = axios.create({ timeout: config.outbound.sendTimeoutMs });
  http.interceptors.response.use((response) => response.data);
  return new lark.Client({
    appId: config.appId,
    appSecret: config.appSecret,
    domain: config.apiUrl,
    cache: new lark.DefaultCache(),
    httpInstance: http as unknown as lark.HttpInstance,
    logger: sdkLogger(logger),
  });
}

/** Calls the API through the SDK; resolves with `data` of a `code` 0 answer, else an SB_CHANNEL_* error. */
export function createFeishuCaller(
  config: FeishuChannelConfig,
  onRateLimited: (retryAfterMs: number | undefined) => void,
) {
  return async function call<T>(
    name: string,
    signal: AbortSignal,
    request: () => Promise<unknown>,
  ): Promise<T> {
    const failure = (error: unknown) => {
      const failed = channelFailure(
        { type: 'feishu', channelId: config.id, call: name },
        error instanceof OpenApiRefusal ? codeFailure(error.answer) : failureOf(error),
        { secrets: [config.appSecret], credentialPath: `channels[${config.id}].app_secret` },
      );
      if (failed.code === 'SB_CHANNEL_RATE_LIMITED') onRateLimited(failed.retryAfterMs);
      return failed;
    };
    const answer = (await abortableCall(
      signal,
      // The SDK takes no signal: a deadline rejects at once, the request itself ends at its timeout.
      () =>
        Promise.race([
          request(),
          new Promise<never>((_, reject) =>
            signal.addEventListener('abort', () => reject(signal.reason), { once: true }),
          ),
        ]),
      failure,
    )) as OpenApiAnswer & T;
    if (answer.code !== undefined && answer.code !== 0) throw failure(new OpenApiRefusal(answer));
    return answer;
  };
}

export type FeishuCaller = ReturnType<typeof createFeishuCaller>;

/**
 * The texts of `replies` in Feishu's limit. With `answering` (the turn, else the message answered)
 * each carries a `uuid` made of it, its place and its text, so that a re-sent part shows once.
 */
export function renderFeishuReplies(replies: readonly Reply[], answering?: string): FeishuText[] {
  return splitReplies(replies, MAX_TEXT_CHARS).map(({ text }, index) => ({
    text,
    ...(answering === undefined ? {} : { uuid: retryKeyOf(answering, index, [text]) }),
  }));
}

/**
 * Replies to `origin` (a reply to a message in a topic lands in the topic: the queued origin keeps
 * no platform event to tell) and edits the bot's text messages, paced per chat. */
export function feishuMessageCalls(
  origin: InboundMessage,
  options: { client: lark.Client; call: FeishuCaller; pacer: SendPacer; signal: AbortSignal },
): MessageCalls<FeishuText> {
  const { client, call, pacer, signal } = options;
  const chat = pacedChatOf(origin);
  const content = (text: string) => JSON.stringify({ text });
  return {
    async post({ text, uuid }) {
      await pacer.pace(chat, signal);
      const answer = await call<OpenApiAnswer>('im.message.reply', signal, () =>
        client.im.message.reply({
          path: { message_id: origin.platform_message_id },
          data: {
            msg_type: 'text',
            content: content(text),
            ...(uuid === undefined ? {} : { uuid }),
          },
        }),
      );
      return answer.data?.message_id ?? '';
    },
    async edit({ text }, ref) {
      await pacer.pace(chat, signal);
      await call('im.message.update', signal, () =>
        client.im.message.update({
          path: { message_id: ref },
          data: { msg_type: 'text', content: content(text) },
        }),
      );
    },
  };
}
