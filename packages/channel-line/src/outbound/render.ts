import type { messagingApi } from '@line/bot-sdk';
import { mimeEssence, splitRepliesWithAttachments } from '@switchboard/channel-kit';
import type { Attachment, Reply } from '@switchboard/core';

/** LINE's limit of one text message, in characters. */
export const MAX_TEXT_CHARS = 5_000;

/** LINE's limit of an image message's `originalContentUrl` and `previewImageUrl`, in characters. */
export const MAX_IMAGE_URL_CHARS = 2_000;

/** The image types LINE shows (its image message takes JPEG and PNG only). */
const IMAGE_TYPES = new Set(['image/jpeg', 'image/png']);

/** One message object of a reply or push: a text, or an image LINE fetches from its URL. */
export type LineMessage = messagingApi.TextMessage | messagingApi.ImageMessage;

/**
 * Why LINE cannot show `attachment`, or `undefined` when it can (an image at a public HTTPS URL).
 * LINE takes no bytes: it fetches an image from `originalContentUrl`, which must be HTTPS, so a
 * `data` attachment would need a public host the gateway does not have. Its audio message needs
 * the track's `duration`, which an attachment does not carry, and a bot has no file message.
 */
export function lineAttachmentRefusal(attachment: Attachment): string | undefined {
  if (attachment.type === 'file') return 'LINE bots have no file message (send a link in the text)';
  if (attachment.type === 'audio')
    return "LINE's audio message needs the track's duration, which an attachment does not carry";
  if (attachment.url === undefined)
    return 'LINE fetches an image from a public HTTPS URL and takes no bytes: give a url, not data';
  if (!attachment.url.startsWith('https:'))
    return 'LINE fetches an image from a public HTTPS URL only: the url is not https';
  if (attachment.url.length > MAX_IMAGE_URL_CHARS)
    return `LINE takes an image URL of at most ${MAX_IMAGE_URL_CHARS} characters`;
  if (attachment.mime_type !== undefined && !IMAGE_TYPES.has(mimeEssence(attachment.mime_type)))
    return `LINE shows JPEG and PNG images only, not ${attachment.mime_type}`;
  return undefined;
}

/**
 * The message objects that answer with `replies`, in order: each reply's images as it lists
 * them (the preview is the same URL: LINE scales it down), then its text cut at 5,000
 * characters. Expects attachments `lineAttachmentRefusal` lets through. Pure.
 */
export function renderLineReplies(replies: readonly Reply[]): LineMessage[] {
  return splitRepliesWithAttachments(replies, MAX_TEXT_CHARS).map((part): LineMessage => {
    if ('text' in part) return { type: 'text', text: part.text };
    const url = part.attachment.url as string;
    return { type: 'image', originalContentUrl: url, previewImageUrl: url };
  });
}
