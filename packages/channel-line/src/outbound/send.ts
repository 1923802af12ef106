import type { messagingApi } from '@line/bot-sdk';
import { requestPlatform, splitReplies } from '@switchboard/channel-kit';
import { type InboundMessage, type Reply, isSwitchboardError } from '@switchboard/core';
import { retryKeyOf } from './retry-key.js';

/** LINE's limits of one reply or push: 5 message objects, of at most 5,000 characters each. */
export const MAX_MESSAGES_PER_CALL = 5;
export const MAX_TEXT_CHARS = 5_000;

/**
 * LINE takes a reply token within one minute of the event; past 50 s of the event's timestamp
 * the reply might arrive too late, so the answer is pushed instead.
 */
export const REPLY_TOKEN_FRESH_MS = 50_000;

/** Where and how the sender calls the Messaging API. */
export interface LineSenderOptions {
  channelId: string;
  /** The API base, without a trailing slash. */
  apiUrl: string;
  channelAccessToken: string;
  /** How long LINE has to answer one call, ms. */
  timeoutMs: number;
  /** How long a send may be tried again (`outbound.max_age`), ms: a used token is kept as long. */
  maxAgeMs: number;
  /** Clock, ms since the epoch. */
  now: () => number;
}

/** The sending half of the channel: remembers reply tokens as events arrive, and sends answers. */
export interface LineSender {
  /** Remembers the reply token of the message `messageId`, from an event of `timestampMs`. */
  remember(messageId: string, replyToken: string, timestampMs: number): void;
  /** Sends `replies` into the chat of `origin`; `answering` (the turn) names the retry keys. */
  send(
    origin: InboundMessage,
    replies: readonly Reply[],
    signal: AbortSignal,
    answering: string,
  ): Promise<void>;
}

function failedWith(error: unknown, status: number, description?: string): boolean {
  if (!isSwitchboardError(error)) return false;
  const details = error.details ?? {};
  return details.status === status && (description === undefined || details.description === description);
}

/**
 * The sending half of the LINE channel. An answer is cut into text messages of 5,000 characters
 * and sent 5 to a call, in order. The first call uses the origin's reply token while it is fresh
 * (replies are free; LINE takes a token once, within a minute). When there is none (stale, or
 * received by another process) or LINE refuses it ("Invalid reply token"), the call is a push to
 * the chat, like every later one, with an `X-Line-Retry-Key` derived from the turn: a push
 * retried after a timeout or a 5xx is delivered once, LINE answers the repeat 409, which counts
 * as sent. A reply takes no retry key, so a token's use is remembered until its send succeeds
 * (or `maxAgeMs`): a retried send skips the reply that went through, and pushes the one whose
 * outcome is unknown, which LINE may then show twice. Errors are the kit's SB_CHANNEL_* mapping:
 * 429 → SB_CHANNEL_RATE_LIMITED, retryable.
 */
export function createLineSender(options: LineSenderOptions): LineSender {
  /** Reply tokens by message id; once used, by which send and whether the reply went through. */
  const tokens = new Map<
    string,
    { replyToken: string; timestampMs: number; sendKey?: string; replied?: boolean }
  >();

  function forgetOld(nowMs: number) {
    for (const [id, token] of tokens) {
      const keptMs = token.sendKey === undefined ? REPLY_TOKEN_FRESH_MS : options.maxAgeMs;
      if (nowMs - token.timestampMs >= keptMs) tokens.delete(id);
    }
  }

  function call(path: string, body: unknown, signal: AbortSignal, headers: Record<string, string> = {}) {
    return requestPlatform({
      where: { type: 'line', channelId: options.channelId, call: `POST ${path}` },
      url: `${options.apiUrl}${path}`,
      headers: { authorization: `Bearer ${options.channelAccessToken}`, ...headers },
      body,
      timeoutMs: options.timeoutMs,
      signal,
      secrets: [options.channelAccessToken],
      credentialPath: `channels[${options.channelId}].channel_access_token`,
    });
  }

  /** Resolves false when LINE no longer takes `replyToken` (expired or used). */
  async function reply(replyToken: string, messages: messagingApi.TextMessage[], signal: AbortSignal) {
    const request: messagingApi.ReplyMessageRequest = { replyToken, messages };
    try {
      await call('/v2/bot/message/reply', request, signal);
      return true;
    } catch (error) {
      if (failedWith(error, 400, 'Invalid reply token')) return false;
      throw error;
    }
  }

  async function push(
    to: string,
    messages: messagingApi.TextMessage[],
    retryKey: string,
    signal: AbortSignal,
  ) {
    const request: messagingApi.PushMessageRequest = { to, messages };
    try {
      await call('/v2/bot/message/push', request, signal, { 'x-line-retry-key': retryKey });
    } catch (error) {
      // An earlier try of this very push was accepted, and its answer lost.
      if (!failedWith(error, 409)) throw error;
    }
  }

  return {
    remember(messageId, replyToken, timestampMs) {
      forgetOld(options.now());
      tokens.set(messageId, { replyToken, timestampMs });
    },

    async send(origin, replies, signal, answering) {
      forgetOld(options.now());
      const token = tokens.get(origin.id);
      const texts = splitReplies(replies, MAX_TEXT_CHARS).map((part) => part.text);
      let sendKey: string | undefined;
      for (let index = 0; index * MAX_MESSAGES_PER_CALL < texts.length; index += 1) {
        const batch = texts.slice(index * MAX_MESSAGES_PER_CALL, (index + 1) * MAX_MESSAGES_PER_CALL);
        const messages = batch.map((text): messagingApi.TextMessage => ({ type: 'text', text }));
        const key = retryKeyOf(answering, index, batch);
        sendKey ??= key;
        if (index === 0 && token !== undefined) {
          if (token.sendKey === key && token.replied) continue;
          if (token.sendKey === undefined) {
            token.sendKey = key;
            token.replied = await reply(token.replyToken, messages, signal);
            if (token.replied) continue;
          }
        }
        await push(origin.chat.id, messages, key, signal);
      }
      // Sent: no try of this send follows, and the token is spent.
      if (token !== undefined && token.sendKey === sendKey) tokens.delete(origin.id);
    },
  };
}
