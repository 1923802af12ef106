import {
  type Element,
  type InboundMessage,
  type MediaType,
  parseInboundMessage,
  parseOrThrow,
} from '@switchboard/core';
import { z } from 'zod';

/** What the normalizer needs besides the message; passed in so that it stays pure. */
export interface NormalizeContext {
  /** The configured channel id (`channels[].id`). */
  channelId: string;
  /** Profile names by WhatsApp id, from the change's `contacts[]`. */
  names: ReadonlyMap<string, string>;
  /** The business number's digits: a message from it is the business's own (the bot's). */
  businessNumber?: string | undefined;
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

/** What a kind of message says: its text (what routing reads) and its elements besides that. */
interface Content {
  text: string;
  elements: Element[];
}

/** How one kind of message is read: its part (under the key named by its `type`) and what it says. */
interface Kind {
  /** `null` for a variant the gateway does not answer. */
  read(part: unknown, what: string): Content | null;
}

function kind<S extends z.ZodType>(schema: S, says: (part: z.output<S>) => Content | null): Kind {
  return { read: (part, what) => says(parseOrThrow(schema, part, 'SB_HTTP_BAD_REQUEST', what)) };
}

/** Media are kept by Meta for 30 days and fetched by id (`GET /{media id}`): the `file_id`. */
const MediaSchema = z.looseObject({
  id: z.string().min(1),
  caption: z.string().optional(),
  mime_type: z.string().optional(),
  filename: z.string().optional(),
  /** Set on audio recorded in the chat (a voice note), not on an audio file sent. */
  voice: z.boolean().optional(),
});

/**
 * A media element of `type` with the caption as the text. The webhook gives no size: the media
 * route learns it from Meta's media URL.
 */
function media(type: MediaType, part: z.output<typeof MediaSchema>): Content {
  const element: Element = {
    type,
    file_id: part.id,
    ...(part.filename === undefined ? {} : { name: part.filename }),
    ...(part.mime_type === undefined ? {} : { mime_type: part.mime_type }),
  };
  return { text: part.caption ?? '', elements: [element] };
}

/** The title of a tapped reply is the text: what the user chose, as if they had typed it. */
const titled = (title: string): Content => ({ text: title, elements: [] });

/** The interactive replies that are a tap on something the business offered. */
const isTap = (type: string): type is 'button_reply' | 'list_reply' =>
  type === 'button_reply' || type === 'list_reply';

/** The kinds of message the gateway answers; others (sticker, reaction, contacts…) are skipped. */
const KINDS: Record<string, Kind> = {
  text: kind(z.looseObject({ body: z.string() }), ({ body }) => ({ text: body, elements: [] })),
  image: kind(MediaSchema, (part) => media('image', part)),
  audio: kind(MediaSchema, (part) => media(part.voice === false ? 'audio' : 'voice', part)),
  video: kind(MediaSchema, (part) => media('video', part)),
  document: kind(MediaSchema, (part) => media('file', part)),
  location: kind(
    z.looseObject({
      latitude: z.number(),
      longitude: z.number(),
      name: z.string().optional(),
      address: z.string().optional(),
    }),
    ({ latitude, longitude, name, address }) => ({
      text: '',
      elements: [
        {
          type: 'location',
          latitude,
          longitude,
          ...(name === undefined ? {} : { name }),
          ...(address === undefined ? {} : { address }),
        },
      ],
    }),
  ),
  // A tap on a reply button or a list row of an interactive message the business sent; other
  // replies (a flow's `nfm_reply`) are skipped.
  interactive: kind(
    z
      .looseObject({
        type: z.string(),
        button_reply: z.looseObject({ title: z.string() }).optional(),
        list_reply: z.looseObject({ title: z.string() }).optional(),
      })
      .superRefine((part, ctx) => {
        if (isTap(part.type) && part[part.type] === undefined)
          ctx.addIssue({ code: 'custom', path: [part.type], message: 'expected an object with a title' });
      }),
    (part) => {
      const tapped = isTap(part.type) ? part[part.type] : undefined;
      return tapped === undefined ? null : titled(tapped.title);
    },
  ),
  // A tap on a quick-reply button of a template message.
  button: kind(z.looseObject({ text: z.string() }), (part) => titled(part.text)),
};

/**
 * Turns one message of a notification into an `InboundMessage`; `null` for kinds the gateway
 * does not answer (stickers, reactions, contacts… are acknowledged and skipped). Throws
 * SB_HTTP_BAD_REQUEST naming the bad field of a malformed message. Pure.
 *
 * Text, captions and the titles of tapped replies (buttons, list rows) are the text; images,
 * audio, video and documents are elements keeping the media id as `file_id`, a shared location a
 * `location` element. Cloud API chats are one-to-one: the chat and the sender are the user's
 * WhatsApp id, which is also where replies go. `platform_message_id` is the `wamid`; `raw` is
 * the message object.
 */
export function normalizeWhatsAppMessage(message: unknown, context: NormalizeContext): InboundMessage | null {
  const parsed = parseOrThrow(MessageSchema, message, 'SB_HTTP_BAD_REQUEST', 'whatsapp message');
  const reader = Object.hasOwn(KINDS, parsed.type) ? KINDS[parsed.type] : undefined;
  if (reader === undefined) return null;
  const part = (message as Record<string, unknown>)[parsed.type];
  const content = reader.read(part, `whatsapp ${parsed.type} message, field ${parsed.type}`);
  if (content === null) return null;
  const { text, elements } = content;
  const name = context.names.get(parsed.from);
  return parseInboundMessage({
    id: context.messageId,
    platform: 'whatsapp',
    channel: context.channelId,
    chat: { type: 'person', id: parsed.from },
    sender: {
      id: parsed.from,
      ...(name === undefined ? {} : { name }),
      is_bot: parsed.from === context.businessNumber,
    },
    elements: [
      ...(text === '' ? [] : [{ type: 'text' as const, text }]),
      ...elements,
      ...(parsed.context === undefined ? [] : [{ type: 'quote' as const, message_id: parsed.context.id }]),
    ],
    text,
    platform_message_id: parsed.id,
    received_at: context.receivedAt,
    raw: message,
  });
}
