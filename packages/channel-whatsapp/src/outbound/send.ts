import {
  type FailedCall,
  type PlatformFailure,
  channelFailure,
  createPostedTexts,
  requestPlatform,
  splitReplies,
} from '@switchboard/channel-kit';
import {
  type InboundMessage,
  type OutboundObserver,
  type Reply,
  type SendPacer,
  SwitchboardError,
  isSwitchboardError,
  pacedChatOf,
} from '@switchboard/core';

/** The Cloud API's limit of one text message's body, in characters. */
export const MAX_TEXT_CHARS = 4096;

/**
 * Graph codes of the Cloud API's rate limits and the wait each suggests when no `Retry-After`
 * came: throughput per number (130429, per second), pair rate to one user (131056, one message
 * in 6 s), and the API call limits of the business account and the app (80007, 4; hourly).
 */
const RATE_LIMIT_WAIT_MS = new Map<number, number>([
  [130429, 1_000],
  [131056, 6_000],
  [80007, 60_000],
  [4, 60_000],
]);

/** How the channel reaches the Cloud API. */
export interface WhatsAppApi {
  channelId: string;
  /** `{api_url}/{api_version}/{phone_number_id}/messages`. */
  messagesUrl: string;
  accessToken: string;
  /** How long Meta has to answer one call, ms. */
  timeoutMs: number;
  /** `outbound.max_age`, ms: how long the texts posted are remembered. */
  maxAgeMs: number;
  /** Clock, ms since the epoch. */
  now: () => number;
}

/**
 * Graph's code for a free-form message refused outside the 24-hour customer-service window: the
 * user last wrote more than 24 hours ago, and only a template may reach them until they write again.
 */
const OUTSIDE_WINDOW_CODE = 131047;

/**
 * The failure as its Graph code (the body's `error.code`) says: Meta
 * answers a rate limit with HTTP 400 as often as 429, so a known rate-limit code is one whatever
 * the status, with a suggested wait when Meta gave none.
 */
function graphFailureOf(failure: PlatformFailure): PlatformFailure {
  const waitMs = RATE_LIMIT_WAIT_MS.get(Number(failure.code));
  if (waitMs === undefined) return failure;
  return { ...failure, kind: 'rate_limited', retryAfterMs: failure.retryAfterMs ?? waitMs };
}

/**
 * The sending half of the WhatsApp channel: the replies cut into texts of 4,096 characters, each
 * sent with `POST /{version}/{phone_number_id}/messages` to the chat's user, one after the other
 * so that they arrive in order, each paced by `pacer` first. A failure ends the send (earlier
 * texts stay sent) with an SB_CHANNEL_* error without the token: a rate limit is retryable
 * SB_CHANNEL_RATE_LIMITED with the wait, a refused token SB_CHANNEL_AUTH_FAILED naming
 * `channels[<id>].access_token`, a send outside the 24-hour customer-service window a final
 * SB_CHANNEL_SEND_FAILED saying so (retrying cannot pass it; only the user's next message opens
 * the window again, and that message is answered anew). The outbox tries a failed send again
 * whole, and the Cloud API takes no idempotency key, so the texts posted are remembered
 * (the kit's `createPostedTexts`, keyed by `answering`, the turn) and skipped then; a text whose answer was
 * lost (a timeout) was perhaps posted all the same, and may show twice.
 */
export function createWhatsAppSender(api: WhatsAppApi, pacer: SendPacer, observer: OutboundObserver) {
  const where: FailedCall = { type: 'whatsapp', channelId: api.channelId, call: 'POST /messages' };
  const errorOptions = {
    secrets: [api.accessToken],
    credentialPath: `channels[${api.channelId}].access_token`,
  };

  function failure(error: unknown): unknown {
    if (!isSwitchboardError(error) || !error.code.startsWith('SB_CHANNEL_')) return error;
    const reported = (error.details ?? {}) as PlatformFailure;
    if (Number(reported.code) === OUTSIDE_WINDOW_CODE) {
      return new SwitchboardError('SB_CHANNEL_SEND_FAILED', {
        message: `whatsapp channel "${api.channelId}": ${where.call} refused (Graph code ${OUTSIDE_WINDOW_CODE}): outside the 24-hour customer-service window; the user last wrote more than 24 hours ago, and only a template message reaches them until they write again`,
        details: error.details,
        retryable: false,
      });
    }
    const graph = graphFailureOf(reported);
    const mapped = graph === reported ? error : channelFailure(where, graph, errorOptions);
    if (mapped.code === 'SB_CHANNEL_RATE_LIMITED')
      observer.rateLimited(api.channelId, mapped.retryAfterMs ?? 0);
    return mapped;
  }

  const posted = createPostedTexts({ maxAgeMs: api.maxAgeMs, now: api.now });

  /** Sends `replies` to the user of `origin`; `answering` (the turn, else the message) keys what was posted. */
  return async function send(
    origin: InboundMessage,
    replies: readonly Reply[],
    signal: AbortSignal,
    answering: string,
  ) {
    const chat = pacedChatOf(origin);
    const parts = splitReplies(replies, MAX_TEXT_CHARS);
    for (const [index, { text }] of parts.entries()) {
      const part = { answering, index, text };
      if (posted.has(part)) continue;
      await pacer.pace(chat, signal);
      await requestPlatform({
        where,
        url: api.messagesUrl,
        headers: { authorization: `Bearer ${api.accessToken}` },
        body: {
          messaging_product: 'whatsapp',
          recipient_type: 'individual',
          to: origin.chat.id,
          type: 'text',
          text: { body: text },
        },
        timeoutMs: api.timeoutMs,
        signal,
        ...errorOptions,
      }).catch((error: unknown) => {
        throw failure(error);
      });
      // The last part posted ends the send, which is then not tried again: nothing to remember.
      if (index < parts.length - 1) posted.add(part);
    }
  };
}
