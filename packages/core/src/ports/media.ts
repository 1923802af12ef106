import type { Readable } from 'node:stream';
import type { MediaElement } from '../model/message.js';

/**
 * Opening a platform's file (docs/design.md §2 "Media"): what `ChannelAdapter.openMedia` takes and
 * returns. The gateway's media route (`GET /v1/media/{token}`) calls it with the reference a
 * signed media token carries, and streams the body on to the caller; it never holds the whole
 * file. The platform's credentials stay inside the adapter: a download URL that needs the bot
 * token is built and fetched there, and a failure names neither. Left out: caching (each call
 * downloads again) and ranges.
 */

/**
 * The part of a media element a channel opens a file by: its platform reference and what it said,
 * with the platform id of the message it came in (`message_id`) for the platforms that serve a
 * message's files by it (Feishu).
 */
export type MediaRef = Pick<MediaElement, 'type' | 'file_id' | 'url' | 'name' | 'mime_type' | 'size'> & {
  /** The platform's id of the message that carries the file, as `platform_message_id` holds it. */
  message_id?: string;
};

/** A file being downloaded from the platform. */
export interface MediaDownload {
  /** The bytes as they arrive; destroying it stops the platform download. */
  body: Readable;
  /** Bytes, when the platform says before sending them. */
  size?: number;
  /** The platform's content type, when it gives one. */
  mimeType?: string;
}
