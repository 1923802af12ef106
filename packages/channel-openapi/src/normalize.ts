import type { InboundMessage } from '@switchboard/core';
import type { PostMessageBody } from './api-schemas.js';

/** What `toInboundMessage` needs besides the request body. */
export interface NormalizeContext {
  /** The gateway id of the new message. */
  id: string;
  /** `channels[].id`. */
  channelId: string;
  /** The caller's `Idempotency-Key`, when it sent one. */
  idempotencyKey?: string;
  /** Milliseconds since the epoch. */
  receivedAt: number;
  /** The caller's W3C `traceparent`, when it sent a valid one: the message continues its trace. */
  traceparent?: string;
  /** With a shared pool: this replica, which follows the message (`InboundMessage.accepted_by`). */
  acceptedBy?: string;
}

/**
 * A validated `POST …/messages` body as the unified message (docs/design.md §2). The session is the
 * chat; an HTTP caller always addresses the bot, so `mentions_bot` is true and group admission
 * never ignores it.
 */
export function toInboundMessage(body: PostMessageBody, context: NormalizeContext): InboundMessage {
  return {
    id: context.id,
    platform: 'openapi',
    channel: context.channelId,
    chat: { type: body.chat_type, id: body.session_id },
    sender: { id: body.user_id, name: body.user_name, is_bot: false },
    elements: [{ type: 'text', text: body.text }],
    text: body.text,
    mentions_bot: true,
    platform_message_id: context.idempotencyKey ?? context.id,
    received_at: context.receivedAt,
    ...(context.traceparent === undefined ? {} : { traceparent: context.traceparent }),
    ...(context.acceptedBy === undefined ? {} : { accepted_by: context.acceptedBy }),
  };
}
