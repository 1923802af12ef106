import { attachmentName, mimeEssence } from '@switchboard/channel-kit';
import { type Attachment, base64Bytes } from '@switchboard/core';

/** The Cloud API's kind of media message for each type of attachment. */
export type WhatsAppMediaKind = 'image' | 'document' | 'audio';

const KINDS = { image: 'image', file: 'document', audio: 'audio' } as const satisfies Record<
  Attachment['type'],
  WhatsAppMediaKind
>;

/** The mime types the Cloud API takes per kind ("Supported media types" in Meta's reference). */
const MIME_TYPES: Record<WhatsAppMediaKind, readonly string[]> = {
  image: ['image/jpeg', 'image/png'],
  audio: ['audio/aac', 'audio/amr', 'audio/mpeg', 'audio/mp4', 'audio/ogg'],
  document: [
    'text/plain',
    'application/pdf',
    'application/msword',
    'application/vnd.ms-excel',
    'application/vnd.ms-powerpoint',
    'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
    'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
    'application/vnd.openxmlformats-officedocument.presentationml.presentation',
  ],
};

/** Each kind in a sentence. */
const AS: Record<WhatsAppMediaKind, string> = { image: 'an image', document: 'a document', audio: 'audio' };

/** The Cloud API's limit of an image, in bytes (5 MB); audio (16 MB) and documents (100 MB) pass the gateway's cap. */
const MAX_IMAGE_BYTES = 5 * 1024 * 1024;

/** The kind of media message that sends `attachment`. */
export function mediaKindOf(attachment: Attachment): WhatsAppMediaKind {
  return KINDS[attachment.type];
}

/**
 * Why WhatsApp would not take `attachment`, or `undefined` when it would: a mime type Meta does
 * not take for its kind, an image past 5 MB, or `data` without the type its upload must state.
 * Checked before any call (the kit's `refuseAttachments`): Meta refuses such a file only after
 * the upload, or once it fetched a link, and a retry cannot change it.
 */
export function whatsAppAttachmentRefusal(attachment: Attachment): string | undefined {
  const kind = mediaKindOf(attachment);
  const accepted = MIME_TYPES[kind];
  if (attachment.mime_type === undefined) {
    // A link's type is what its server says, which Meta reads; an upload must state it.
    return attachment.data === undefined
      ? undefined
      : 'a data attachment needs a mime_type, which the upload states';
  }
  if (!accepted.includes(mimeEssence(attachment.mime_type)))
    return `WhatsApp does not take ${attachment.mime_type} as ${AS[kind]} (it takes ${accepted.join(', ')})`;
  if (kind === 'image' && attachment.data !== undefined && base64Bytes(attachment.data) > MAX_IMAGE_BYTES)
    return `an image is at most ${MAX_IMAGE_BYTES} bytes on WhatsApp`;
  return undefined;
}

/**
 * The `{ type, <kind>: … }` part of a media message (pure): the file by `link` (Meta fetches a
 * `url` itself) or by the `id` of an upload; a document carries its file name, which WhatsApp
 * shows.
 */
export function renderMediaMessage(attachment: Attachment, file: { link: string } | { id: string }) {
  const kind = mediaKindOf(attachment);
  const part = kind === 'document' ? { ...file, filename: attachmentName(attachment) } : file;
  return { type: kind, [kind]: part };
}
