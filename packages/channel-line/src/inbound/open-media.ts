import { mediaUnavailable, openDownload } from '@switchboard/channel-kit';
import type { MediaDownload, MediaRef } from '@switchboard/core';

/**
 * Opens the content of a LINE message (docs/design.md §2 "Media"): a streamed
 * `GET <data api>/v2/bot/message/{messageId}/content` with the channel access token. The message
 * id is the element's `file_id`; LINE keeps content for a limited time, after which it answers 404.
 */
export function openLineMedia(
  source: { channelId: string; dataApiUrl: string; channelAccessToken: string },
  media: MediaRef,
  signal: AbortSignal,
): Promise<MediaDownload> {
  const from = { type: 'line', channelId: source.channelId };
  if (media.file_id === undefined)
    return Promise.reject(mediaUnavailable(from, 'the element has no file_id'));
  const url = `${source.dataApiUrl.replace(/\/+$/, '')}/v2/bot/message/${encodeURIComponent(media.file_id)}/content`;
  return openDownload(from, url, {
    headers: { authorization: `Bearer ${source.channelAccessToken}` },
    signal,
  });
}
