import { type IncomingMessage, get as httpGet } from 'node:http';
import { get as httpsGet } from 'node:https';
import { type MediaDownload, SwitchboardError } from '@switchboard/core';

/** Where a download came from, for its errors: never its URL, which may hold a credential. */
export interface DownloadSource {
  /** The platform, e.g. `telegram`. */
  type: string;
  channelId: string;
}

/** SB_MEDIA_UNAVAILABLE for a file `source` could not hand over, naming no URL and no credential. */
export function mediaUnavailable(
  source: DownloadSource,
  reason: string,
  options: { status?: number; cause?: unknown } = {},
): SwitchboardError {
  return new SwitchboardError('SB_MEDIA_UNAVAILABLE', {
    message: `${source.type} channel "${source.channelId}" could not open the file: ${reason}`,
    details: {
      channel: source.channelId,
      ...(options.status === undefined ? {} : { status: options.status }),
    },
    ...(options.cause === undefined ? {} : { cause: options.cause }),
  });
}

/**
 * The URL an element names for its file, checked by `allowed` before any request (a channel
 * fetches only its platform's hosts): SB_MEDIA_UNAVAILABLE naming the host otherwise.
 */
export function elementFileUrl(
  source: DownloadSource,
  media: { url?: string | undefined },
  allowed: { test(url: URL): boolean; where: string },
): URL {
  if (media.url === undefined) throw mediaUnavailable(source, 'the element has no url');
  let url: URL;
  try {
    url = new URL(media.url);
  } catch {
    throw mediaUnavailable(source, 'the element url is not a URL');
  }
  if (!allowed.test(url)) throw mediaUnavailable(source, `the file is not on ${allowed.where} (${url.host})`);
  return url;
}

/** The answer to a GET, once its headers are in. */
function requestOnce(
  url: URL,
  headers: Record<string, string>,
  signal: AbortSignal,
): Promise<IncomingMessage> {
  const get = url.protocol === 'https:' ? httpsGet : httpGet;
  return new Promise((resolve, reject) => {
    const request = get(url, { headers, signal }, resolve);
    request.once('error', reject);
  });
}

/**
 * GETs a platform file as a Node stream (docs/design.md §2 "Media"): node:http rather than
 * `fetch`, because its response is the socket's own stream, paced by whoever reads it, where a
 * web stream in between kept megabytes queued. A 3xx is followed (at most 3 times) only where
 * `follow` allows the new URL, and without `headers` once it leaves the origin: a bearer token
 * never goes anywhere else. Any other non-2xx, or a network failure, rejects with
 * SB_MEDIA_UNAVAILABLE naming the status or the system code alone (a URL may hold the token);
 * `signal` aborts the request and, later, the body.
 */
export async function openDownload(
  source: DownloadSource,
  url: string,
  options: {
    headers?: Record<string, string>;
    signal: AbortSignal;
    /** Whether a redirect may go to this URL. Default: never. */
    follow?: (target: URL) => boolean;
  },
): Promise<MediaDownload> {
  let target = new URL(url);
  const origin = target.origin;
  for (let hop = 0; ; hop += 1) {
    let response: IncomingMessage;
    try {
      response = await requestOnce(
        target,
        target.origin === origin ? (options.headers ?? {}) : {},
        options.signal,
      );
    } catch (err) {
      if (options.signal.aborted) throw options.signal.reason;
      const code = (err as { code?: unknown }).code;
      throw mediaUnavailable(
        source,
        `the download failed (${typeof code === 'string' ? code : 'network error'})`,
      );
    }
    const status = response.statusCode ?? 0;
    const location = response.headers.location;
    if (status >= 300 && status < 400 && location !== undefined && hop < 3) {
      response.resume();
      const next = new URL(location, target);
      if (options.follow?.(next) !== true)
        throw mediaUnavailable(source, `the file server redirected to a host not allowed (${next.host})`, {
          status,
        });
      target = next;
      continue;
    }
    if (status < 200 || status >= 300) {
      response.resume();
      throw mediaUnavailable(source, `the file server answered ${status}`, { status });
    }
    const length = Number(response.headers['content-length']);
    const mimeType = response.headers['content-type'];
    return {
      body: response,
      ...(response.headers['content-length'] !== undefined && Number.isSafeInteger(length) && length >= 0
        ? { size: length }
        : {}),
      ...(mimeType === undefined ? {} : { mimeType }),
    };
  }
}
