import { mediaUnavailable, openDownload } from '@switchboard/channel-kit';
import type { MediaDownload, MediaRef } from '@switchboard/core';

/** Discord's CDN hosts: attachment URLs are signed links there, fetched without credentials. */
const DISCORD_CDN_HOSTS: ReadonlySet<string> = new Set(['cdn.discordapp.com', 'media.discordapp.net']);

/**
 * Opens a Discord attachment (docs/design.md §2 "Media"): a streamed GET of its CDN `url`, which
 * needs no token. Only Discord's CDN over https, or the origin of the configured `api_url`, is
 * fetched: the gateway must not become a fetcher of whatever URL an element holds.
 */
export function openDiscordMedia(
  source: { channelId: string; apiUrl: string | undefined },
  media: MediaRef,
  signal: AbortSignal,
): Promise<MediaDownload> {
  const from = { type: 'discord', channelId: source.channelId };
  if (media.url === undefined) return Promise.reject(mediaUnavailable(from, 'the element has no url'));
  let url: URL;
  try {
    url = new URL(media.url);
  } catch {
    return Promise.reject(mediaUnavailable(from, 'the element url is not a URL'));
  }
  const onCdn = url.protocol === 'https:' && DISCORD_CDN_HOSTS.has(url.hostname);
  const onApi = source.apiUrl !== undefined && url.origin === new URL(source.apiUrl).origin;
  if (!onCdn && !onApi)
    return Promise.reject(mediaUnavailable(from, `the file is not on Discord's CDN (${url.host})`));
  return openDownload(from, url.href, { signal });
}
