import { type IncomingMessage, get as httpGet } from 'node:http';
import { get as httpsGet } from 'node:https';
import { isIP } from 'node:net';
import { type Attachment, MAX_ATTACHMENT_BYTES, SwitchboardError } from '@switchboard/core';
import { isPublicAddress, publicLookup } from './public-address.js';

/** An attachment's bytes, with the name and type the platform is given. */
export interface AttachmentFile {
  bytes: Buffer;
  /** The attachment's `name`, else one made of its url's last segment or its type and mime type. */
  name: string;
  mimeType?: string;
}

/** Options of `attachmentFile`. */
export interface AttachmentFileOptions {
  /** The send's deadline. */
  signal: AbortSignal;
  /** How long fetching a `url` may take, ms. Default: 30 s. */
  fetchTimeoutMs?: number;
  /** The most bytes a `url` may serve. Default: `MAX_ATTACHMENT_BYTES` (the cap of `data`). */
  maxBytes?: number;
  /**
   * Whether a `url` may lead to a loopback, private or link-local address (`outbound.
   * allow_private_urls`). Default: false — a url comes from a pipeline, maybe from a user.
   */
  allowPrivateUrls?: boolean;
  /** The channel, for errors. */
  channelId: string;
}

const DEFAULTS = {
  fetchTimeoutMs: 30_000,
  maxBytes: MAX_ATTACHMENT_BYTES,
  allowPrivateUrls: false,
} satisfies Partial<AttachmentFileOptions>;

/** File name extensions of the common mime types: Discord and Slack show a file by its name. */
const EXTENSIONS: Record<string, string> = {
  'image/png': 'png',
  'image/jpeg': 'jpg',
  'image/gif': 'gif',
  'image/webp': 'webp',
  'audio/mpeg': 'mp3',
  'audio/ogg': 'ogg',
  'audio/wav': 'wav',
  'application/pdf': 'pdf',
  'text/plain': 'txt',
};

/** A url path segment decoded; kept as it is when its escapes are not valid UTF-8 (`%E0%A4%A`). */
function decodedSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    // Thrown on every try of the send, an uncoded URIError would be retried until `max_age`.
    return segment;
  }
}

/** The name a platform shows for `attachment`. */
export function attachmentName(attachment: Attachment): string {
  if (attachment.name !== undefined) return attachment.name;
  if (attachment.url !== undefined) {
    const last = new URL(attachment.url).pathname.split('/').pop();
    if (last !== undefined && last !== '') return decodedSegment(last);
  }
  const extension = attachment.mime_type === undefined ? undefined : EXTENSIONS[attachment.mime_type];
  return extension === undefined ? attachment.type : `${attachment.type}.${extension}`;
}

function fetchFailed(channelId: string, url: string, reason: string, retryable: boolean): SwitchboardError {
  // The url's query may hold a signature: only its origin and path are named.
  const { origin, pathname } = new URL(url);
  return new SwitchboardError('SB_CHANNEL_ATTACHMENT_FETCH_FAILED', {
    message: `channel "${channelId}": attachment ${origin}${pathname}: ${reason}`,
    details: { channel: channelId, url: `${origin}${pathname}` },
    retryable,
  });
}

/**
 * The bytes of `attachment`: its `data` decoded, or what its `url` serves, fetched by the gateway
 * for a platform that takes uploads only. A fetch is bounded by `maxBytes` (read no further) and
 * `fetchTimeoutMs`, and refused (unless `allowPrivateUrls`) when it or a redirect leads to a
 * non-public address; it fails with SB_CHANNEL_ATTACHMENT_FETCH_FAILED, retryable for a network
 * failure, a timeout, a 5xx or a 429 answer, final for another status, a refused host or a file past
 * the cap.
 */
export async function attachmentFile(
  attachment: Attachment,
  options: AttachmentFileOptions,
): Promise<AttachmentFile> {
  const name = attachmentName(attachment);
  const mime = attachment.mime_type === undefined ? {} : { mimeType: attachment.mime_type };
  if (attachment.data !== undefined) return { bytes: Buffer.from(attachment.data, 'base64'), name, ...mime };
  const url = attachment.url as string;
  const maxBytes = options.maxBytes ?? DEFAULTS.maxBytes;
  const { channelId, signal } = options;
  const timeout = AbortSignal.timeout(options.fetchTimeoutMs ?? DEFAULTS.fetchTimeoutMs);
  const allowPrivate = options.allowPrivateUrls ?? DEFAULTS.allowPrivateUrls;
  const both = AbortSignal.any([signal, timeout]);
  const failed = (error: unknown): never => {
    if (error instanceof SwitchboardError) throw error;
    if (signal.aborted) throw signal.reason;
    if (timeout.aborted) throw fetchFailed(channelId, url, 'timed out', true);
    if ((error as { code?: unknown }).code === 'EADDRNOTPUBLIC')
      throw fetchFailed(channelId, url, 'the host is not a public address', false);
    throw fetchFailed(channelId, url, 'network failure', true);
  };
  let response: IncomingMessage;
  try {
    response = await requestFollowing(new URL(url), allowPrivate, both, channelId, url);
  } catch (error) {
    return failed(error);
  }
  const status = response.statusCode ?? 0;
  if (status < 200 || status >= 300) {
    response.destroy();
    throw fetchFailed(channelId, url, `HTTP ${status}`, status >= 500 || status === 429);
  }
  const tooLarge = () => fetchFailed(channelId, url, `larger than ${maxBytes} bytes`, false);
  if (Number(response.headers['content-length'] ?? 0) > maxBytes) {
    response.destroy();
    throw tooLarge();
  }
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of response as AsyncIterable<Buffer>) {
      size += chunk.byteLength;
      if (size > maxBytes) throw tooLarge();
      chunks.push(chunk);
    }
  } catch (error) {
    response.destroy();
    return failed(error);
  }
  const type = attachment.mime_type ?? response.headers['content-type'] ?? undefined;
  return { bytes: Buffer.concat(chunks), name, ...(type === undefined ? {} : { mimeType: type }) };
}

/** The most redirects a url attachment is followed through. */
const MAX_REDIRECTS = 3;

/**
 * GETs `target`, following up to `MAX_REDIRECTS` redirects, each hop checked like the first:
 * http or https only, and — unless `allowPrivate` — a host that is, or resolves to, a public
 * address only (`publicLookup` checks the addresses the socket connects to).
 */
async function requestFollowing(
  start: URL,
  allowPrivate: boolean,
  signal: AbortSignal,
  channelId: string,
  url: string,
): Promise<IncomingMessage> {
  let target = start;
  for (let hop = 0; ; hop += 1) {
    if (target.protocol !== 'http:' && target.protocol !== 'https:')
      throw fetchFailed(channelId, url, `${target.protocol} is not http or https`, false);
    // An IP literal is connected to without a lookup: it is checked here.
    const host = target.hostname.replace(/^\[|\]$/g, '');
    if (!allowPrivate && isIP(host) !== 0 && !isPublicAddress(host))
      throw fetchFailed(channelId, url, 'the host is not a public address', false);
    const get = target.protocol === 'https:' ? httpsGet : httpGet;
    const response = await new Promise<IncomingMessage>((resolve, reject) => {
      const request = get(target, { signal, ...(allowPrivate ? {} : { lookup: publicLookup }) }, resolve);
      request.once('error', reject);
    });
    const status = response.statusCode ?? 0;
    const location = response.headers.location;
    if (status < 300 || status >= 400 || location === undefined) return response;
    response.destroy();
    if (hop >= MAX_REDIRECTS) throw fetchFailed(channelId, url, 'too many redirects', false);
    target = new URL(location, target);
  }
}
