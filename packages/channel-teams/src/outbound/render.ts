import { attachmentName, mimeEssence, splitRepliesWithAttachments } from '@switchboard/channel-kit';
import { type Attachment, type Reply, base64Bytes } from '@switchboard/core';

/**
 * Teams refuses an activity past about 28 KB (HTTP 413). 7,000 characters of text stay under it
 * whatever the script (at most 4 bytes a character in UTF-8), with room for the envelope.
 */
export const MAX_TEXT_CHARS = 7_000;

/**
 * The most bytes of a `data` image sent inline, as a `data:` URI in the activity. Teams leaves
 * base64 images out of its 100 KB message limit, but the Bot Framework takes a request of about
 * 256 KB at most, and Microsoft advises a hosted URL for anything not small: 180 KiB is 240 KiB
 * of base64, with room for the envelope.
 */
export const MAX_INLINE_IMAGE_BYTES = 180 * 1024;

/** The image types Teams renders inline, by the file name extensions that name them. */
const INLINE_IMAGE_TYPES: Record<string, string> = {
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  gif: 'image/gif',
};
const INLINE_TYPES = new Set(Object.values(INLINE_IMAGE_TYPES));

/** An image Teams shows in the conversation: an activity attachment of an image type. */
export interface TeamsImage {
  contentType: string;
  /** The https url the client fetches, or the bytes as a `data:<type>;base64,…` URI. */
  contentUrl: string;
  name: string;
}

/** One activity of a send: a text (which a streamed preview can become), or an inline image. */
export type TeamsPart = string | TeamsImage;

/**
 * The image type Teams is told: the `mime_type` without its parameters, else one known by the
 * name's or url's extension.
 */
function inlineTypeOf(attachment: Attachment): string | undefined {
  if (attachment.mime_type !== undefined) return mimeEssence(attachment.mime_type);
  const named = attachment.name ?? (attachment.url === undefined ? '' : new URL(attachment.url).pathname);
  const extension = /\.([a-z0-9]+)$/i.exec(named)?.[1]?.toLowerCase();
  return extension === undefined ? undefined : INLINE_IMAGE_TYPES[extension];
}

/**
 * Why Teams cannot show `attachment`, or `undefined` when it can: an image of a type Teams
 * renders inline, at an https url (the client fetches it) or as `data` of at most
 * `MAX_INLINE_IMAGE_BYTES`. A bot sends other files only through the file consent card and the
 * user's OneDrive, which the gateway does not do.
 */
export function teamsAttachmentRefusal(attachment: Attachment): string | undefined {
  if (attachment.type !== 'image')
    return 'a Teams bot sends files and audio only through a file consent card (OneDrive), which the gateway does not do (send a link in the text)';
  const type = inlineTypeOf(attachment);
  if (type === undefined)
    return 'Teams renders image/png, image/jpeg and image/gif inline: give mime_type (or a name or url ending .png, .jpg or .gif)';
  if (!INLINE_TYPES.has(type)) return `Teams renders image/png, image/jpeg and image/gif inline, not ${type}`;
  if (attachment.url !== undefined && !attachment.url.startsWith('https:'))
    return 'the Teams client fetches an image from an HTTPS URL only: the url is not https';
  if (attachment.data !== undefined && base64Bytes(attachment.data) > MAX_INLINE_IMAGE_BYTES)
    return `a data image goes inline in the activity, at most ${MAX_INLINE_IMAGE_BYTES} bytes (this one is ${base64Bytes(attachment.data)}): give a url`;
  return undefined;
}

/**
 * The activities that answer with `replies`, in order: each reply's images as it lists them,
 * then its text cut at `MAX_TEXT_CHARS`. Expects attachments `teamsAttachmentRefusal` lets
 * through. Pure.
 */
export function renderTeamsReplies(replies: readonly Reply[]): TeamsPart[] {
  return splitRepliesWithAttachments(replies, MAX_TEXT_CHARS).map((part): TeamsPart => {
    if ('text' in part) return part.text;
    const { attachment } = part;
    const contentType = inlineTypeOf(attachment) as string;
    return {
      contentType,
      contentUrl: attachment.url ?? `data:${contentType};base64,${attachment.data}`,
      name: attachmentName(attachment),
    };
  });
}

/** The message activity of `part`: its text, or the image as its only attachment. */
export function messageActivityOf(part: TeamsPart): Record<string, unknown> {
  return typeof part === 'string'
    ? { type: 'message', text: part }
    : { type: 'message', attachments: [{ ...part }] };
}
