import { mediaUnavailable, openDownload } from '@switchboard/channel-kit';
import { type MediaDownload, type MediaRef, isSwitchboardError } from '@switchboard/core';

/** What opening a file of a Feishu message needs. */
export interface FeishuMediaSource {
  channelId: string;
  /** The open platform's base URL, without a trailing slash. */
  apiUrl: string;
  /** The tenant access token, as the channel's API client keeps it (`FeishuApi.tenantToken`). */
  tenantToken(signal: AbortSignal): Promise<string>;
  /** Drops the cached token (`FeishuApi.forgetTenantToken`). */
  forgetTenantToken(): void;
}

/**
 * The statuses the open platform answers a refused token with: 400 with code 99991663 (the code
 * is in a body the download does not read), 401 or 403.
 */
const REFUSED_TOKEN_STATUSES = new Set([400, 401, 403]);

/** What Feishu's message ids (`om_…`) and file keys (`img_v2_…`, `file_v3_…`) are made of. */
const FEISHU_ID = /^[A-Za-z0-9_-]+$/;

/**
 * The URL of a message's resource: `type=image` for an image key, `file` for the file key of a
 * file, an audio message or a video (Feishu's "get resources in a message").
 */
export function feishuResourceUrl(
  apiUrl: string,
  media: Pick<MediaRef, 'type'> & { message_id: string; file_id: string },
): string {
  const path = `/open-apis/im/v1/messages/${encodeURIComponent(media.message_id)}/resources/${encodeURIComponent(media.file_id)}`;
  return `${apiUrl}${path}?type=${media.type === 'image' ? 'image' : 'file'}`;
}

/**
 * Opens a file a user sent (docs/design.md §2 "Media"): a streamed GET of the message's resource
 * with the tenant access token. Feishu serves a file only under the message it came in, so a link
 * without the message's id (`message_id`) is refused with SB_MEDIA_UNAVAILABLE, as is one without
 * the file key; so is a token the open platform would not give, with its reason. A download
 * refused as a refused token could be is made once more with a new token, as a send is: the SDK
 * would keep a revoked one until its expiry.
 */
export async function openFeishuMedia(
  source: FeishuMediaSource,
  media: MediaRef,
  signal: AbortSignal,
): Promise<MediaDownload> {
  const from = { type: 'feishu', channelId: source.channelId };
  const { message_id, file_id } = media;
  if (file_id === undefined || file_id === '') throw mediaUnavailable(from, 'the element has no file key');
  if (message_id === undefined)
    throw mediaUnavailable(from, 'the link names no message, and Feishu serves files by message');
  // Feishu's ids are letters, digits, _ and -: nothing else may shape the path the token goes to.
  if (!FEISHU_ID.test(message_id) || !FEISHU_ID.test(file_id))
    throw mediaUnavailable(from, 'the message id or file key is not a Feishu id');
  const url = feishuResourceUrl(source.apiUrl, { type: media.type, message_id, file_id });
  const download = async () => {
    let token: string;
    try {
      token = await source.tenantToken(signal);
    } catch (err) {
      if (signal.aborted) throw signal.reason;
      throw mediaUnavailable(from, (err as Error).message, { cause: err });
    }
    return openDownload(from, url, { headers: { authorization: `Bearer ${token}` }, signal });
  };
  try {
    return await download();
  } catch (err) {
    const status = isSwitchboardError(err)
      ? (err.details as { status?: unknown } | undefined)?.status
      : undefined;
    if (typeof status !== 'number' || !REFUSED_TOKEN_STATUSES.has(status)) throw err;
    source.forgetTenantToken();
    return download();
  }
}
