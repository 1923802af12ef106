import type { messagingApi } from '@line/bot-sdk';
import { type PlatformFailure, requestPlatform, retryKeyOf } from '@switchboard/channel-kit';
import { type InboundMessage, type Reply, SwitchboardError, isSwitchboardError } from '@switchboard/core';
import { type LineMessage, renderLineReplies } from './render.js';

/** LINE's limit of one reply or push: 5 message objects. */
export const MAX_MESSAGES_PER_CALL = 5;

/** LINE takes a reply token within a minute of the event; past 50 s the answer is pushed instead. */
export const REPLY_TOKEN_FRESH_MS = 50_000;

/** How the channel reaches the Messaging API. */
export interface LineApi {
  channelId: string;
  /** The API base, without a trailing slash. */
  apiUrl: string;
  channelAccessToken: string;
  /** How long LINE has to answer one call, ms. */
  timeoutMs: number;
}

/**
 * What LINE says of a push refused because the account's message quota of the month is used up
 * (`You have reached your monthly limit.`). It comes with HTTP 429, as the rate limit does (`The
 * API rate limit has been exceeded…`), but waiting minutes does not pass it: only the next month,
 * or a larger plan, does.
 */
const MONTHLY_LIMIT = /monthly limit/i;

/**
 * A failure as LINE means it: a 429 for the monthly limit is a final SB_CHANNEL_SEND_FAILED
 * saying so, not a rate limit the outbox would try again until `max_age`. Others as they are.
 */
function lineFailure(api: LineApi, call: string, error: unknown): unknown {
  if (!isSwitchboardError(error)) return error;
  const reported = (error.details ?? {}) as PlatformFailure;
  if (reported.status !== 429 || !MONTHLY_LIMIT.test(reported.description ?? '')) return error;
  return new SwitchboardError('SB_CHANNEL_SEND_FAILED', {
    message: `line channel "${api.channelId}": ${call} refused (HTTP 429: ${reported.description}): the monthly message limit of the LINE Official Account is reached; pushes fail until it resets next month or the plan allows more (replies with a fresh reply token do not count)`,
    details: error.details,
    retryable: false,
  });
}

/**
 * One Messaging API call (`POST` with a body unless told otherwise), resolving with the parsed
 * answer: the kit's `requestPlatform`, whose failures are SB_CHANNEL_* errors without the token;
 * the monthly limit is a final failure (`lineFailure`).
 */
export function callLine(
  api: LineApi,
  path: string,
  call: { method?: string; body?: unknown; headers?: Record<string, string>; signal?: AbortSignal } = {},
): Promise<unknown> {
  const method = call.method ?? 'POST';
  const where = { type: 'line', channelId: api.channelId, call: `${method} ${path}` };
  return requestPlatform({
    where,
    method,
    url: `${api.apiUrl}${path}`,
    headers: { authorization: `Bearer ${api.channelAccessToken}`, ...call.headers },
    body: call.body,
    timeoutMs: api.timeoutMs,
    ...(call.signal === undefined ? {} : { signal: call.signal }),
    secrets: [api.channelAccessToken],
    credentialPath: `channels[${api.channelId}].channel_access_token`,
  }).catch((error: unknown) => {
    throw lineFailure(api, where.call, error);
  });
}

function failedWith(error: unknown, status: number, description?: string): boolean {
  const details = isSwitchboardError(error) ? (error.details ?? {}) : {};
  return details.status === status && (description === undefined || details.description === description);
}

/** What a message counts as in a retry key: a text as is, an image as its JSON. */
function keyTextOf(message: LineMessage): string {
  return message.type === 'text' ? message.text : JSON.stringify(message);
}

/** How often the held tokens are swept: a sweep visits them all, so not on every event. */
const SWEEP_EVERY_MS = 10_000;

/** A reply token, and once used, by which send, when, and whether the reply went through. */
interface ReplyToken {
  replyToken: string;
  timestampMs: number;
  sendKey?: string;
  usedAtMs?: number;
  replied?: boolean;
}

/**
 * The sending half of the LINE channel. An answer is rendered as message objects (each reply's
 * images, then its text cut into texts of 5,000 characters: `render.ts`), sent 5 to a call in
 * order. The first call replies with the origin's token while it is fresh (free of
 * the message quota; LINE takes a token once). Without one (stale, or received by another
 * process), or when LINE refuses it, the call is a push to the chat like every later one, with an
 * `X-Line-Retry-Key` derived from the turn: a push tried again after a timeout or a 5xx is
 * delivered once, and LINE's 409 for the repeat counts as sent. A reply takes no retry key, so a
 * token's use is remembered until its send succeeds (at most `maxAgeMs` from the use, as long as
 * the outbox tries it again): a retried send skips the reply that went through and pushes one whose
 * outcome is unknown (LINE may then show it twice).
 */
export function createLineSender(api: LineApi, options: { maxAgeMs: number; now: () => number }) {
  const tokens = new Map<string, ReplyToken>();
  let nextSweepMs = 0;

  /** Unused, a token is good for a reply until it is stale; used, it is kept for the send's retries. */
  function heldUntil(token: ReplyToken): number {
    return token.usedAtMs === undefined
      ? token.timestampMs + REPLY_TOKEN_FRESH_MS
      : token.usedAtMs + options.maxAgeMs;
  }

  function forgetOld(nowMs: number) {
    if (nowMs < nextSweepMs) return;
    nextSweepMs = nowMs + SWEEP_EVERY_MS;
    for (const [id, token] of tokens) {
      if (nowMs >= heldUntil(token)) tokens.delete(id);
    }
  }

  /** Resolves false when LINE no longer takes the token (expired or used). */
  async function reply(token: ReplyToken, messages: LineMessage[], signal: AbortSignal) {
    const body: messagingApi.ReplyMessageRequest = { replyToken: token.replyToken, messages };
    try {
      await callLine(api, '/v2/bot/message/reply', { body, signal });
      return true;
    } catch (error) {
      if (failedWith(error, 400, 'Invalid reply token')) return false;
      throw error;
    }
  }

  async function push(to: string, messages: LineMessage[], key: string, signal: AbortSignal) {
    const body: messagingApi.PushMessageRequest = { to, messages };
    const headers = { 'x-line-retry-key': key };
    // 409: an earlier try of this very push was accepted, and its answer lost.
    await callLine(api, '/v2/bot/message/push', { body, headers, signal }).catch((error: unknown) => {
      if (!failedWith(error, 409)) throw error;
    });
  }

  return {
    /** Remembers the reply token of the message `messageId`, from an event of `timestampMs`. */
    remember(messageId: string, replyToken: string, timestampMs: number): void {
      forgetOld(options.now());
      tokens.set(messageId, { replyToken, timestampMs });
    },

    /** Sends `replies` into the chat of `origin`; `answering` (the turn) names the retry keys. */
    async send(origin: InboundMessage, replies: readonly Reply[], signal: AbortSignal, answering: string) {
      const nowMs = options.now();
      forgetOld(nowMs);
      const held = tokens.get(origin.id);
      // The sweep is periodic: a token past its time may still be held.
      const token = held !== undefined && nowMs < heldUntil(held) ? held : undefined;
      const all = renderLineReplies(replies);
      const calls = Array.from({ length: Math.ceil(all.length / MAX_MESSAGES_PER_CALL) }, (_, index) =>
        all.slice(index * MAX_MESSAGES_PER_CALL, (index + 1) * MAX_MESSAGES_PER_CALL),
      );
      const keys = calls.map((messages, index) => retryKeyOf(answering, index, messages.map(keyTextOf)));
      for (const [index, messages] of calls.entries()) {
        const key = keys[index] as string;
        if (index === 0 && token?.sendKey === key && token.replied) continue;
        if (index === 0 && token !== undefined && token.sendKey === undefined) {
          token.sendKey = key;
          token.usedAtMs = nowMs;
          token.replied = await reply(token, messages, signal);
          if (token.replied) continue;
        }
        await push(origin.chat.id, messages, key, signal);
      }
      // Sent: no try of this send follows, and the token is spent.
      if (token?.sendKey !== undefined && token.sendKey === keys[0]) {
        tokens.delete(origin.id);
      }
    },
  };
}
