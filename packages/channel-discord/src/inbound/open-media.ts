import { elementFileUrl, openDownload } from '@switchboard/channel-kit';
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
  const apiOrigin = source.apiUrl === undefined ? undefined : new URL(source.apiUrl).origin;
  let url: URL;
  try {
    url = elementFileUrl(from, media, {
      test: (candidate) =>
        (candidate.protocol === 'https:' && DISCORD_CDN_HOSTS.has(candidate.hostname)) ||
        candidate.origin === apiOrigin,
      where: "Discord's CDN",
    });
  } catch (err) {
    return Promise.reject(err);
  }
  return openDownload(from, url.href, { signal });
}
