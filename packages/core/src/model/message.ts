import { z } from 'zod';
import { newUlid } from './ids.js';
import { TRACEPARENT_PATTERN } from './traceparent.js';
import { parseOrThrow } from './validation.js';

/** Who started the conversation: a one-to-one chat or a group (channel, guild channel…). */
export const ChatTypeSchema = z.enum(['person', 'group']);
export type ChatType = z.infer<typeof ChatTypeSchema>;

/** The element types that carry a file (docs/design.md §2 "Media"). */
export const MEDIA_TYPES = ['image', 'voice', 'audio', 'video', 'file'] as const;
export type MediaType = (typeof MEDIA_TYPES)[number];

/** What every media element carries: one shape for the five media types. */
const mediaFields = {
  /** The platform's reference to the file, which only its channel can open. */
  file_id: z.string().optional(),
  /** The platform's own URL of the file (may need the channel's credentials). */
  url: z.string().optional(),
  name: z.string().optional(),
  mime_type: z.string().optional(),
  /** Bytes, when the platform says. */
  size: z.number().int().nonnegative().optional(),
  /**
   * The gateway's `GET /v1/media/{token}` URL of the file: added when a turn is handed to its
   * pipeline, never by a channel and never stored, so that it is fresh on every attempt.
   */
  media_url: z.string().optional(),
  /** The platform's size exceeds the channel's `media.max_bytes`: the media URL answers 413. */
  too_large: z.literal(true).optional(),
};

/**
 * One part of a message. `type` is what `message_has_element` rules test; platform-specific
 * details stay in optional fields so that a rule never depends on a platform.
 */
export const ElementSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('text'), text: z.string() }),
  ...MEDIA_TYPES.map((type) => z.object({ type: z.literal(type), ...mediaFields })),
  z.object({
    type: z.literal('mention'),
    user_id: z.string(),
    name: z.string().optional(),
    is_bot_self: z.boolean().default(false),
  }),
  z.object({ type: z.literal('quote'), message_id: z.string(), text: z.string().optional() }),
  /** A shared place: its coordinates in degrees, with the name and address the sender picked. */
  z.object({
    type: z.literal('location'),
    latitude: z.number().min(-90).max(90),
    longitude: z.number().min(-180).max(180),
    name: z.string().optional(),
    address: z.string().optional(),
  }),
  z.object({ type: z.literal('command'), name: z.string(), args: z.string().default('') }),
]);
export type Element = z.infer<typeof ElementSchema>;
export type ElementType = Element['type'];
export const ELEMENT_TYPES = ElementSchema.options.map((option) => option.shape.type.value);
/** An image, voice note, audio, video or file element. */
export type MediaElement = Extract<Element, { type: MediaType }>;

/** Whether `element` carries a file. */
export function isMediaElement(element: Element): element is MediaElement {
  return (MEDIA_TYPES as readonly string[]).includes(element.type);
}

/** How a platform shows a file a reply carries: a picture, a playable track, a document. */
const AttachmentTypeSchema = z.enum(['image', 'file', 'audio']);

/**
 * What a transcript keeps of a reply's attachment (docs/design.md §2 "Handoff"): what it was and
 * where, never its `data`, which the reply's delivery alone carries.
 */
export const AttachmentSummarySchema = z.object({
  type: AttachmentTypeSchema,
  url: z.string().optional(),
  name: z.string().optional(),
  mime_type: z.string().optional(),
});
export type AttachmentSummary = z.infer<typeof AttachmentSummarySchema>;

/**
 * What a turn resumed after a handoff carries (docs/design.md §2 "Handoff"): why the handoff
 * began, and everything said meanwhile, the operator's replies included, oldest first.
 */
export const HandoffContextSchema = z.object({
  reason: z.string(),
  by: z.string(),
  started_at: z.number().int().nonnegative(),
  transcript: z.array(
    z.object({
      from: z.enum(['user', 'operator']),
      at: z.number().int().nonnegative(),
      /** The message id, or the operator reply's. */
      id: z.string(),
      /** The sender's name, or the operator's. */
      name: z.string().optional(),
      text: z.string(),
      /** The files an operator's reply carried, named, without their bytes. */
      attachments: z.array(AttachmentSummarySchema).optional(),
    }),
  ),
});
export type HandoffContext = z.infer<typeof HandoffContextSchema>;

/** What happened to an earlier message, when an inbound message reports that rather than a new one. */
export const EVENT_TYPES = ['edited', 'deleted', 'reaction'] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/**
 * An edit, deletion or reaction (docs/design.md §2 "Events"): the inbound message's own
 * `platform_message_id` names the event, so that a redelivered event is a duplicate and an edit
 * is not a duplicate of its original; `message_id` names the original. An `edited` event carries
 * the new text and elements; `deleted` and `reaction` ones carry none of the original's.
 */
export const InboundEventSchema = z.object({
  type: z.enum(EVENT_TYPES),
  /** The original's `platform_message_id`, in the form the channel gives it. */
  message_id: z.string().min(1),
  /** `reaction`: the emoji (a Unicode emoji, or the platform's name of a custom one). */
  emoji: z.string().min(1).optional(),
  /** `reaction`: true when the reaction was taken away. */
  removed: z.boolean().optional(),
});
export type InboundEvent = z.infer<typeof InboundEventSchema>;

/** The one shape every channel turns its platform events into (docs/design.md §2). */
export const InboundMessageSchema = z.object({
  /** Gateway id: a ULID, so ids sort by arrival. */
  id: z.string().min(1),
  platform: z.string().min(1),
  /** The configured channel instance id (`channels[].id`). */
  channel: z.string().min(1),
  /**
   * The tenant whose channel received it (docs/design.md §10), set by ingress; absent for the
   * tenant `default`. It stays with the message (a replayed dead letter keeps its tenant's routing).
   */
  tenant: z.string().min(1).optional(),
  chat: z.object({
    type: ChatTypeSchema,
    id: z.string().min(1),
    thread: z.string().min(1).optional(),
  }),
  sender: z.object({
    id: z.string().min(1),
    name: z.string().optional(),
    is_bot: z.boolean().default(false),
  }),
  elements: z.array(ElementSchema).default([]),
  /** Plain rendering of the elements; what `message_content` rules and pipelines read. */
  text: z.string(),
  mentions_bot: z.boolean().default(false),
  platform_message_id: z.string().min(1),
  /** Milliseconds since the epoch at which the gateway received the event. */
  received_at: z.number().int().nonnegative(),
  /** The platform event as received, kept so a reply can quote or thread on it. */
  raw: z.unknown().optional(),
  /**
   * The message's trace context, a W3C `traceparent` (docs/design.md §2 "Tracing"): a channel
   * sets the caller's, to continue its trace; with tracing on, ingress points it at the message's
   * receive span, and it travels with the queued message to whichever replica runs the turn.
   */
  traceparent: z.string().regex(TRACEPARENT_PATTERN).optional(),
  /**
   * The replica that accepted the message and follows it until its outcome (the HTTP channel's
   * status tracker, which answers its status and its waiting requests), when replicas share the
   * pool (docs/design.md §5 "Several replicas"): the start of its turns and its outcome are relayed
   * to that replica only, wherever they happen. Set by the channel; absent when no replica follows it.
   */
  accepted_by: z.string().min(1).optional(),
  /**
   * How many dead-letter replays of this message came before this acceptance: absent (0) for
   * the first. A replay accepts it again one generation later, so that its statuses replace the
   * earlier run's (`statusVersion`).
   */
  generation: z.number().int().nonnegative().optional(),
  /**
   * Set on the message a handoff ends with (`resume: bot`): the held messages merged into one,
   * with the handoff's transcript. Never set by a channel.
   */
  handoff: HandoffContextSchema.optional(),
  /** Set when the message reports an edit, deletion or reaction instead of saying something new. */
  event: InboundEventSchema.optional(),
});
export type InboundMessage = z.infer<typeof InboundMessageSchema>;
/** What a channel fills in; `parseInboundMessage` supplies the defaults. */
export type InboundMessageInput = z.input<typeof InboundMessageSchema>;

/**
 * `message` without its `raw` platform event: what a delivery, an outcome and a handoff's
 * transcript keep of it (the event may be large, and may quote what the platform sent).
 */
export function withoutRaw(message: InboundMessage): InboundMessage {
  const { raw: _raw, ...kept } = message;
  return kept;
}

/** The tenant the top-level `channels`, `pipelines` and `routing` form (docs/design.md §10). */
export const DEFAULT_TENANT = 'default';

/** The tenant `message` belongs to: its stamp, or `default` when it has none. */
export function tenantOfMessage(message: Pick<InboundMessage, 'tenant'>): string {
  return message.tenant ?? DEFAULT_TENANT;
}

/** A new gateway message id: ULIDs from one process sort in creation order. */
export function newMessageId(): string {
  return newUlid();
}

/**
 * The most bytes one attachment may hold (its decoded `data`, or what its `url` serves): 10 MiB,
 * what Discord takes from any bot and Telegram in a photo; its base64 (13.4 MiB) fits in one
 * pipeline answer (16 MiB at most).
 */
export const MAX_ATTACHMENT_BYTES = 10 * 1024 * 1024;
/** The most attachments one reply may carry. */
export const MAX_ATTACHMENTS_PER_REPLY = 10;

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** Bytes that standard base64 `data` decodes to (its length is a multiple of 4). */
export function base64Bytes(data: string): number {
  const padding = data.endsWith('==') ? 2 : data.endsWith('=') ? 1 : 0;
  return (data.length / 4) * 3 - padding;
}

/**
 * A file a reply carries: where its bytes are (exactly one of a public `url`, which the platform
 * or the gateway fetches, or `data`, standard base64), and how the platform should show it
 * (`image` as a picture, `audio` as a playable track, `file` as a document to download).
 */
export const AttachmentSchema = z
  .object({
    type: AttachmentTypeSchema,
    url: z.url({ protocol: /^https?$/, error: 'must be an http or https URL' }).optional(),
    data: z
      .string()
      .refine((data) => data.length % 4 === 0 && BASE64.test(data), {
        message: 'must be standard base64 (A-Z a-z 0-9 + /, padded with =)',
        abort: true,
      })
      .refine(
        (data) => base64Bytes(data) <= MAX_ATTACHMENT_BYTES,
        `must decode to at most ${MAX_ATTACHMENT_BYTES} bytes`,
      )
      .optional(),
    /** The file name the platform shows; a default per type otherwise. */
    name: z.string().min(1).max(255).optional(),
    mime_type: z.string().min(1).max(255).optional(),
  })
  .superRefine(({ url, data }, ctx) => {
    if ((url === undefined) === (data === undefined))
      ctx.addIssue({
        code: 'custom',
        path: url === undefined ? [] : ['data'],
        message: url === undefined ? 'needs one of url or data' : 'give url or data, not both',
      });
  });
export type Attachment = z.infer<typeof AttachmentSchema>;

/** `attachment` as a transcript keeps it: without its bytes. */
export function attachmentSummaryOf({ data: _data, ...kept }: Attachment): AttachmentSummary {
  return kept;
}

/**
 * One reply the pipeline produced for a turn: a text, attachments, or both. A channel sends a
 * reply's attachments first, in their order, then its text (a picture, then what it says).
 */
export const ReplySchema = z
  .object({
    text: z.string().optional(),
    attachments: z.array(AttachmentSchema).max(MAX_ATTACHMENTS_PER_REPLY).optional(),
  })
  .refine((reply) => reply.text !== undefined || (reply.attachments?.length ?? 0) > 0, {
    message: 'needs a text or at least one attachment',
  });
export type Reply = z.infer<typeof ReplySchema>;

/** `reply`'s text, `''` when it has none (a reply of attachments only). */
export function replyText(reply: Reply): string {
  return reply.text ?? '';
}

/** A pipeline's answer may hand the conversation to an operator: `{"handoff": {"reason": "…"}}`. */
export const HandoffRequestSchema = z.strictObject({ reason: z.string().min(1).max(500) });

/** What a pipeline answers a turn with: the replies to send, and whether an operator takes over. */
export const PipelineAnswerSchema = z.object({
  replies: z.array(ReplySchema),
  handoff: HandoffRequestSchema.optional(),
});

/** `answer` as a `PipelineResult` carries it (no `handoff` key when there is none). */
export function answerResult({ replies, handoff }: z.infer<typeof PipelineAnswerSchema>) {
  return handoff === undefined ? { replies } : { replies, handoff };
}

/**
 * Replies sent to one chat (a session of the HTTP channel) for one message, as a replica hands
 * them to the event streams other replicas hold (docs/design.md §5 "Several replicas").
 */
export interface SessionReplies {
  channel: string;
  /** The chat id: the HTTP channel's `session_id`. */
  session: string;
  messageId: string;
  turn: string | null;
  replies: readonly Reply[];
}

/** Validates a channel's message; throws SB_MESSAGE_INVALID naming every bad field. */
export function parseInboundMessage(input: unknown): InboundMessage {
  return parseOrThrow(InboundMessageSchema, input, 'SB_MESSAGE_INVALID', 'invalid message');
}
