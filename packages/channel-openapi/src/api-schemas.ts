import {
  ChatTypeSchema,
  DELIVERY_STATES,
  MESSAGE_STATUSES,
  ReplySchema,
  hasUnpairedSurrogate,
} from '@switchboard/core';
import { ErrorBodySchema, MAX_ID_CHARS } from '@switchboard/http';
import { z } from 'zod';

/**
 * The request and response shapes of the channel's routes. Fastify validates with them and
 * `@fastify/swagger` turns them into the OpenAPI document, so the document cannot drift from
 * what the routes accept.
 */

/** Longest `text` a caller may send: far above a chat message, far below the body limit. */
export const MAX_TEXT_CHARS = 32_768;

/**
 * Text as callers send it: `"\ud800"` is valid JSON but no text; it broke session keys (a 500)
 * and would be stored as U+FFFD. Refused here, so the 400 names the field.
 */
function text(maxChars: number) {
  return z
    .string()
    .min(1)
    .max(maxChars)
    .refine((value) => !hasUnpairedSurrogate(value), 'must not contain an unpaired UTF-16 surrogate');
}

/** `POST {prefix}/messages`; `timeout_ms` is capped by the channel's `max_wait_timeout`. */
export function postMessageBodySchema(maxWaitTimeoutMs: number) {
  return z.strictObject({
    session_id: text(MAX_ID_CHARS).describe(
      'The conversation: messages of one session run one after the other.',
    ),
    user_id: text(MAX_ID_CHARS).describe('Who sent the message.'),
    text: text(MAX_TEXT_CHARS),
    user_name: text(MAX_ID_CHARS).optional(),
    chat_type: ChatTypeSchema.default('person').describe('Routing rules of type launcher_type read this.'),
    wait: z.boolean().default(true).describe('Wait for the replies (200) instead of answering 202 at once.'),
    timeout_ms: z
      .number()
      .int()
      .min(1)
      .max(maxWaitTimeoutMs)
      .optional()
      .describe('How long to wait for the replies before answering 202; default: the channel wait_timeout.'),
  });
}
export type PostMessageBody = z.output<ReturnType<typeof postMessageBodySchema>>;

/** Loose so that the other headers (Authorization…) stay on the request after validation. */
export const PostMessageHeadersSchema = z.looseObject({
  traceparent: z
    .string()
    .optional()
    .describe(
      'W3C trace context: with tracing on, the message continues this trace (an invalid value is ignored).',
    ),
  'idempotency-key': z
    .string()
    .min(1)
    .max(MAX_ID_CHARS)
    .optional()
    .describe(
      'Retries with the same key and the same message (session_id, user_id, text, user_name, chat_type; wait and timeout_ms may differ) within 24 h return the first request’s message; another message under the key is refused with 422 SB_IDEMPOTENCY_KEY_REUSED. Keys are the caller’s own: per channel and API key (or loopback).',
    ),
});

export const MessageParamsSchema = z.strictObject({ id: text(MAX_ID_CHARS) });
export const SessionParamsSchema = z.strictObject({ session_id: text(MAX_ID_CHARS) });

/** Where a message stands: the body of every `…/messages` answer but errors. */
export const MessageViewSchema = z.object({
  id: z.string(),
  status: z.enum(MESSAGE_STATUSES),
  pipeline: z.string().nullable(),
  /** The routing rule that decided (for `discarded`, the discarding rule). */
  rule: z.string().nullable(),
  /** The turn that answered; shared by every message of a merged burst. */
  turn: z.string().nullable(),
  /**
   * The replies: for `completed`, the turn's, on every replica, also while `delivery` is
   * `pending`; none of an answer whose delivery failed.
   */
  replies: z.array(ReplySchema),
  /**
   * Where the replies stand: `pending` (stored, being sent: `status` is already `completed`,
   * with the replies),
   * `delivered`, `failed` (given up); null when there is nothing to deliver.
   */
  delivery: z.enum(DELIVERY_STATES).nullable(),
  error: z.string().nullable(),
  /** The message's OpenTelemetry trace id (32 hex digits); null when tracing is off. */
  trace_id: z.string().nullable(),
  /**
   * Why a message was ignored, dropped (`quota`, `queue_overflow`…) or dead-lettered; present on
   * the answer that saw it happen.
   */
  reason: z.string().optional(),
});
export type MessageView = z.output<typeof MessageViewSchema>;

/** Error answers every channel route may give, for the document. */
export const COMMON_ERROR_RESPONSES = {
  400: ErrorBodySchema.describe('The request is invalid; the message names every bad field.'),
  401: ErrorBodySchema.describe('Missing or invalid `Authorization: Bearer <api key>`.'),
  403: ErrorBodySchema.describe('No api_keys are configured and the client is not on loopback.'),
  429: ErrorBodySchema.describe(
    'Too many requests in flight, the queue is full, or a quota of the tenant is used up (`SB_QUOTA_EXCEEDED`: the message was dropped); see Retry-After.',
  ),
  503: ErrorBodySchema.describe('The gateway is starting or shutting down; see Retry-After.'),
};
