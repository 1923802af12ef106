import {
  type FailedCall,
  type MediaReplyPart,
  type PlatformFailure,
  attachmentFile,
  channelFailure,
  createPostedTexts,
  refuseAttachments,
  requestPlatform,
  splitRepliesWithAttachments,
} from '@switchboard/channel-kit';
import {
  type Attachment,
  type InboundMessage,
  type OutboundObserver,
  type Reply,
  type SendPacer,
  SwitchboardError,
  isSwitchboardError,
  pacedChatOf,
} from '@switchboard/core';
import { renderMediaMessage, whatsAppAttachmentRefusal } from './media-message.js';

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
  /** `{api_url}/{api_version}/{phone_number_id}/media`: uploads. */
  mediaUrl: string;
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
 * The sending half of the WhatsApp channel: each reply's attachments, then its text cut into
 * texts of 4,096 characters, each sent with `POST /{version}/{phone_number_id}/messages` to the
 * chat's user, one after the other so that they arrive in order, each paced by `pacer` first. An
 * attachment is an image, document (`file`, with its file name) or audio message: a `url` by
 * `link`, which Meta fetches; `data` uploaded first (`POST /{phone_number_id}/media`, multipart)
 * and sent by the media `id` answered. Attachments WhatsApp would not take (`media-message.ts`)
 * fail the send before any call with a final SB_CHANNEL_ATTACHMENTS_UNSUPPORTED naming each. A failure ends the send (earlier
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
  const uploadWhere: FailedCall = { ...where, call: 'POST /media' };
  const errorOptions = {
    secrets: [api.accessToken],
    credentialPath: `channels[${api.channelId}].access_token`,
  };

  function failure(error: unknown, call = where): unknown {
    if (!isSwitchboardError(error) || !error.code.startsWith('SB_CHANNEL_')) return error;
    const reported = (error.details ?? {}) as PlatformFailure;
    if (Number(reported.code) === OUTSIDE_WINDOW_CODE) {
      return new SwitchboardError('SB_CHANNEL_SEND_FAILED', {
        message: `whatsapp channel "${api.channelId}": ${call.call} refused (Graph code ${OUTSIDE_WINDOW_CODE}): outside the 24-hour customer-service window; the user last wrote more than 24 hours ago, and only a template message reaches them until they write again`,
        details: error.details,
        retryable: false,
      });
    }
    const graph = graphFailureOf(reported);
    const mapped = graph === reported ? error : channelFailure(call, graph, errorOptions);
    if (mapped.code === 'SB_CHANNEL_RATE_LIMITED')
      observer.rateLimited(api.channelId, mapped.retryAfterMs ?? 0);
    return mapped;
  }

  const posted = createPostedTexts({ maxAgeMs: api.maxAgeMs, now: api.now });
  const authorization = { authorization: `Bearer ${api.accessToken}` };

  /**
   * Uploads a `data` attachment; resolves with its media id. Not paced: an upload posts nothing
   * into the chat. An upload whose message then fails is made again by the retry: an unused
   * media id costs nothing, and Meta deletes it after 30 days.
   */
  async function upload(attachment: Attachment, signal: AbortSignal): Promise<string> {
    const file = await attachmentFile(attachment, { signal, channelId: api.channelId });
    // `whatsAppAttachmentRefusal` lets only a data attachment with a mime type through to here.
    const type = attachment.mime_type as string;
    const form = new FormData();
    form.append('messaging_product', 'whatsapp');
    form.append('type', type);
    form.append('file', new Blob([file.bytes], { type }), file.name);
    const answer = (await requestPlatform({
      where: uploadWhere,
      url: api.mediaUrl,
      headers: authorization,
      multipart: form,
      timeoutMs: api.timeoutMs,
      signal,
      ...errorOptions,
    }).catch((error: unknown) => {
      throw failure(error, uploadWhere);
    })) as { id?: unknown } | undefined;
    if (typeof answer?.id === 'string') return answer.id;
    throw channelFailure(uploadWhere, { description: 'the answer has no media id' }, errorOptions);
  }

  /** The message of one part: a text, or a media message once its file is uploaded. */
  async function messageOf(part: MediaReplyPart, signal: AbortSignal) {
    if ('text' in part) return { type: 'text', text: { body: part.text } };
    const { attachment } = part;
    const file =
      attachment.url === undefined ? { id: await upload(attachment, signal) } : { link: attachment.url };
    return renderMediaMessage(attachment, file);
  }

  /** Sends `replies` to the user of `origin`; `answering` (the turn, else the message) keys what was posted. */
  return async function send(
    origin: InboundMessage,
    replies: readonly Reply[],
    signal: AbortSignal,
    answering: string,
  ) {
    refuseAttachments(replies, { type: 'whatsapp', channelId: api.channelId }, whatsAppAttachmentRefusal);
    const chat = pacedChatOf(origin);
    const parts = splitRepliesWithAttachments(replies, MAX_TEXT_CHARS);
    for (const [index, part] of parts.entries()) {
      // An attachment is keyed by what it is (its url or data), a text by itself.
      const key = { answering, index, text: 'text' in part ? part.text : JSON.stringify(part.attachment) };
      if (posted.has(key)) continue;
      const message = await messageOf(part, signal);
      await pacer.pace(chat, signal);
      await requestPlatform({
        where,
        url: api.messagesUrl,
        headers: authorization,
        body: {
          messaging_product: 'whatsapp',
          recipient_type: 'individual',
          to: origin.chat.id,
          ...message,
        },
        timeoutMs: api.timeoutMs,
        signal,
        ...errorOptions,
      }).catch((error: unknown) => {
        throw failure(error);
      });
      // The last part posted ends the send, which is then not tried again: nothing to remember.
      if (index < parts.length - 1) posted.add(key);
    }
  };
}
