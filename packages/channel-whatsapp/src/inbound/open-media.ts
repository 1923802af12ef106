import { mediaUnavailable, openDownload } from '@switchboard/channel-kit';
import type { MediaDownload, MediaRef } from '@switchboard/core';

/** What opening a WhatsApp media object needs. */
export interface WhatsAppMediaSource {
  channelId: string;
  /** The Graph API base URL, without a trailing slash. */
  apiUrl: string;
  apiVersion: string;
  accessToken: string;
}

/** The part of `GET /{media id}` this reads. */
interface MediaInfo {
  url?: unknown;
  mime_type?: unknown;
  file_size?: unknown;
}

/** Meta's media hosts (`lookaside.fbsbx.com` today), where the access token may go. */
const META_MEDIA_HOSTS = ['.fbsbx.com', '.facebook.com', '.whatsapp.net'];

function mayCarryToken(url: URL, apiUrl: string): boolean {
  if (url.origin === new URL(apiUrl).origin) return true;
  return url.protocol === 'https:' && META_MEDIA_HOSTS.some((suffix) => url.hostname.endsWith(suffix));
}

/**
 * Opens a WhatsApp media object (docs/design.md §2 "Media"): `GET /{version}/{media id}` for its
 * short-lived URL, then a streamed GET of that URL, both with the access token — the second only
 * on Meta's media hosts (or `api_url`'s origin), since the URL comes from an answer, not from us.
 */
export async function openWhatsAppMedia(
  source: WhatsAppMediaSource,
  media: MediaRef,
  signal: AbortSignal,
): Promise<MediaDownload> {
  const from = { type: 'whatsapp', channelId: source.channelId };
  if (media.file_id === undefined) throw mediaUnavailable(from, 'the element has no file_id');
  const authorization = `Bearer ${source.accessToken}`;
  let info: MediaInfo;
  try {
    const response = await fetch(
      `${source.apiUrl}/${source.apiVersion}/${encodeURIComponent(media.file_id)}`,
      { headers: { authorization }, signal },
    );
    if (!response.ok) {
      await response.body?.cancel();
      throw mediaUnavailable(from, `the media lookup answered ${response.status}`, {
        status: response.status,
      });
    }
    info = (await response.json()) as MediaInfo;
  } catch (err) {
    if (signal.aborted) throw signal.reason;
    if (err instanceof Error && 'code' in err && err.code === 'SB_MEDIA_UNAVAILABLE') throw err;
    throw mediaUnavailable(from, 'the media lookup failed');
  }
  if (typeof info.url !== 'string') throw mediaUnavailable(from, 'the media lookup gave no url');
  let url: URL;
  try {
    url = new URL(info.url);
  } catch {
    throw mediaUnavailable(from, 'the media lookup gave no valid url');
  }
  if (!mayCarryToken(url, source.apiUrl))
    throw mediaUnavailable(from, `the media url is not on Meta's media hosts (${url.host})`);
  const download = await openDownload(from, url.href, { headers: { authorization }, signal });
  const size = download.size ?? (typeof info.file_size === 'number' ? info.file_size : undefined);
  const mimeType = download.mimeType ?? (typeof info.mime_type === 'string' ? info.mime_type : undefined);
  return {
    body: download.body,
    ...(size === undefined ? {} : { size }),
    ...(mimeType === undefined ? {} : { mimeType }),
  };
}
