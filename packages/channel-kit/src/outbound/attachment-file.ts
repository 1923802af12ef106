import { type Attachment, MAX_ATTACHMENT_BYTES, SwitchboardError } from '@switchboard/core';

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
  /** The channel, for errors. */
  channelId: string;
}

const DEFAULTS = {
  fetchTimeoutMs: 30_000,
  maxBytes: MAX_ATTACHMENT_BYTES,
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

/** The name a platform shows for `attachment`. */
export function attachmentName(attachment: Attachment): string {
  if (attachment.name !== undefined) return attachment.name;
  if (attachment.url !== undefined) {
    const last = new URL(attachment.url).pathname.split('/').pop();
    if (last !== undefined && last !== '') return decodeURIComponent(last);
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
 * `fetchTimeoutMs`; it fails with SB_CHANNEL_ATTACHMENT_FETCH_FAILED, retryable for a network
 * failure, a timeout or a 5xx answer, final for another status or a file past the cap.
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
  let response: Response;
  try {
    response = await fetch(url, { signal: AbortSignal.any([signal, timeout]), redirect: 'follow' });
  } catch {
    if (signal.aborted) throw signal.reason;
    throw fetchFailed(channelId, url, timeout.aborted ? 'timed out' : 'network failure', true);
  }
  if (!response.ok) {
    await response.body?.cancel();
    throw fetchFailed(channelId, url, `HTTP ${response.status}`, response.status >= 500);
  }
  const tooLarge = () => fetchFailed(channelId, url, `larger than ${maxBytes} bytes`, false);
  if (Number(response.headers.get('content-length') ?? 0) > maxBytes) {
    await response.body?.cancel();
    throw tooLarge();
  }
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of response.body ?? []) {
      size += chunk.byteLength;
      if (size > maxBytes) throw tooLarge();
      chunks.push(Buffer.from(chunk));
    }
  } catch (error) {
    await response.body?.cancel().catch(() => {});
    if (error instanceof SwitchboardError) throw error;
    if (signal.aborted) throw signal.reason;
    throw fetchFailed(channelId, url, timeout.aborted ? 'timed out' : 'network failure', true);
  }
  const type = attachment.mime_type ?? response.headers.get('content-type') ?? undefined;
  return { bytes: Buffer.concat(chunks), name, ...(type === undefined ? {} : { mimeType: type }) };
}
