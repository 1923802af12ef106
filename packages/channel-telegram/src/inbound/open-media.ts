import { mediaUnavailable, openDownload } from '@switchboard/channel-kit';
import type { MediaDownload, MediaRef } from '@switchboard/core';
import type { Api } from 'grammy';
import { toChannelError } from '../errors.js';
import type { ApiSignal } from './polling.js';

/** What opening a Telegram file needs: the Bot API client, where files are served, and the token. */
export interface TelegramMediaSource {
  api: Api;
  channelId: string;
  /** The Bot API root without a trailing slash (`https://api.telegram.org` by default). */
  apiRoot: string;
  token: string;
}

/**
 * Opens a Telegram file (docs/design.md §2 "Media"): getFile for its `file_path`, then a streamed
 * GET of `<api root>/file/bot<token>/<file_path>`. The download URL holds the token, so it never
 * leaves this function: a failed fetch is reported by its status or system code alone. Telegram
 * serves bots files up to 20 MB; getFile refuses larger ones (SB_MEDIA_UNAVAILABLE).
 */
export async function openTelegramMedia(
  source: TelegramMediaSource,
  media: MediaRef,
  signal: AbortSignal,
): Promise<MediaDownload> {
  const { channelId } = source;
  const from = { type: 'telegram', channelId };
  if (media.file_id === undefined) throw mediaUnavailable(from, 'the element has no file_id');
  let filePath: string | undefined;
  try {
    filePath = (await source.api.getFile(media.file_id, signal as ApiSignal)).file_path;
  } catch (err) {
    if (signal.aborted) throw signal.reason;
    const failure = toChannelError(err, { channelId, method: 'getFile', token: source.token });
    throw mediaUnavailable(from, failure.message, { cause: failure });
  }
  if (filePath === undefined) throw mediaUnavailable(from, 'getFile returned no file_path');
  return openDownload(from, `${source.apiRoot}/file/bot${source.token}/${filePath}`, { signal });
}
