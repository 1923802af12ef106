import { Readable } from 'node:stream';
import { type MediaDownload, type MediaRef, SwitchboardError } from '@switchboard/core';
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

function unavailable(channelId: string, reason: string, cause?: unknown, status?: number): SwitchboardError {
  return new SwitchboardError('SB_MEDIA_UNAVAILABLE', {
    message: `telegram channel "${channelId}" could not open the file: ${reason}`,
    details: { channel: channelId, ...(status === undefined ? {} : { status }) },
    ...(cause === undefined ? {} : { cause }),
  });
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
  if (media.file_id === undefined) throw unavailable(channelId, 'the element has no file_id');
  let filePath: string | undefined;
  try {
    filePath = (await source.api.getFile(media.file_id, signal as ApiSignal)).file_path;
  } catch (err) {
    if (signal.aborted) throw signal.reason;
    const failure = toChannelError(err, { channelId, method: 'getFile', token: source.token });
    throw unavailable(channelId, failure.message, failure);
  }
  if (filePath === undefined) throw unavailable(channelId, 'getFile returned no file_path');
  let response: Response;
  try {
    response = await fetch(`${source.apiRoot}/file/bot${source.token}/${filePath}`, { signal });
  } catch (err) {
    if (signal.aborted) throw signal.reason;
    // Undici's message and cause may quote the URL, and so the token: only the system code is kept.
    const code = (err as { cause?: { code?: unknown } }).cause?.code;
    throw unavailable(
      channelId,
      `the download failed (${typeof code === 'string' ? code : 'network error'})`,
    );
  }
  if (!response.ok || response.body === null) {
    await response.body?.cancel();
    throw unavailable(channelId, `the file server answered ${response.status}`, undefined, response.status);
  }
  const length = Number(response.headers.get('content-length'));
  const mimeType = response.headers.get('content-type');
  return {
    body: Readable.fromWeb(response.body as import('node:stream/web').ReadableStream<Uint8Array>),
    ...(Number.isSafeInteger(length) && length >= 0 && response.headers.has('content-length')
      ? { size: length }
      : {}),
    ...(mimeType === null ? {} : { mimeType }),
  };
}
