import { type InboundMessage, parseInboundMessage, parseOrThrow } from '@switchboard/core';
import { z } from 'zod';

/** What the normalizer needs besides the message; passed in so that it stays pure. */
export interface NormalizeContext {
  /** The configured channel id (`channels[].id`). */
  channelId: string;
  /** Profile names by WhatsApp id, from the change's `contacts[]`. */
  names: ReadonlyMap<string, string>;
  /** The gateway id for the message (`newMessageId()`). */
  messageId: string;
  /** Milliseconds since the epoch. */
  receivedAt: number;
}

/** The fields of an inbound message the gateway reads (`value.messages[]`). */
const MessageSchema = z.looseObject({
  /** The sender's WhatsApp id: their phone number, digits only. */
  from: z.string().min(1),
  /** The `wamid`, unique across chats: the redelivery key. */
  id: z.string().min(1),
  type: z.string().min(1),
  /** Set when the user replied to an earlier message. */
  context: z.looseObject({ id: z.string().min(1) }).optional(),
});

/** What a `type: text` message adds. */
const TextSchema = z.looseObject({ text: z.looseObject({ body: z.string() }) });

/**
 * Turns one message of a notification into an `InboundMessage`; `null` for kinds the gateway
 * does not answer (images, audio, reactions, locations… are acknowledged and skipped). Throws
 * SB_HTTP_BAD_REQUEST naming the bad field of a malformed message. Pure.
 *
 * Cloud API chats are one-to-one: the chat and the sender are the user's WhatsApp id, which is
 * also where replies go. `platform_message_id` is the `wamid`; `raw` is the message object.
 */
export function normalizeWhatsAppMessage(message: unknown, context: NormalizeContext): InboundMessage | null {
  const parsed = parseOrThrow(MessageSchema, message, 'SB_HTTP_BAD_REQUEST', 'whatsapp message');
  if (parsed.type !== 'text') return null;
  const name = context.names.get(parsed.from);
  const text = parseOrThrow(TextSchema, message, 'SB_HTTP_BAD_REQUEST', 'whatsapp text message').text.body;
  return parseInboundMessage({
    id: context.messageId,
    platform: 'whatsapp',
    channel: context.channelId,
    chat: { type: 'person', id: parsed.from },
    sender: { id: parsed.from, ...(name === undefined ? {} : { name }) },
    elements: [
      { type: 'text', text },
      ...(parsed.context === undefined ? [] : [{ type: 'quote' as const, message_id: parsed.context.id }]),
    ],
    text,
    platform_message_id: parsed.id,
    received_at: context.receivedAt,
    raw: message,
  });
}
