import { elementFileUrl, mediaUnavailable, openDownload } from '@switchboard/channel-kit';
import { type MediaDownload, type MediaRef, isSwitchboardError } from '@switchboard/core';
import { parseActivityRefKey } from '../activity-ref.js';
import type { AccessTokens } from '../outbound/access-token.js';

/** What opening a Teams file needs: the bot's Bot Connector tokens. */
export interface TeamsMediaSource {
  channelId: string;
  tokens: AccessTokens;
}

/** Microsoft's Bot Connector host of the public cloud, where inline images are served. */
const CONNECTOR_HOST = 'smba.trafficmanager.net';

/** SharePoint and OneDrive for Business hosts: a shared file's pre-authenticated download link. */
const SHAREPOINT_HOST_SUFFIXES = ['.sharepoint.com', '.sharepoint.us', '.sharepoint.cn'];

/**
 * How a file at `url` may be fetched: `bearer` with the bot's token on the Bot Connector — the
 * `serviceUrl` of the activity the file came in (authenticated with it) or Microsoft's connector
 * host over https; `anonymous` on SharePoint's hosts over https, whose download links carry
 * their own authorization; `null` anywhere else. The URL comes from the activity: the token must
 * never go where a forged one points, nor the gateway fetch whatever an element names. Pure.
 */
export function teamsFileAccess(url: URL, serviceUrl: string | undefined): 'bearer' | 'anonymous' | null {
  if (serviceUrl !== undefined && URL.canParse(serviceUrl) && url.origin === new URL(serviceUrl).origin)
    return 'bearer';
  if (url.protocol !== 'https:') return null;
  if (url.hostname === CONNECTOR_HOST) return 'bearer';
  return SHAREPOINT_HOST_SUFFIXES.some((suffix) => url.hostname.endsWith(suffix)) ? 'anonymous' : null;
}

/**
 * Opens a Teams attachment (docs/design.md §2 "Media"): a streamed GET of its `url`, with the
 * bot's token as bearer on the Bot Connector (inline images) and without it on SharePoint (a
 * shared file's download link), as `teamsFileAccess` says; any other host is refused with
 * SB_MEDIA_UNAVAILABLE naming it, before any request. A redirect is followed only to those hosts,
 * and without the token once it leaves the origin. A token the connector refuses (401, 403) is forgotten.
 */
export async function openTeamsMedia(
  source: TeamsMediaSource,
  media: MediaRef,
  signal: AbortSignal,
): Promise<MediaDownload> {
  const from = { type: 'teams', channelId: source.channelId };
  const serviceUrl =
    media.message_id === undefined ? undefined : parseActivityRefKey(media.message_id)?.serviceUrl;
  const url = elementFileUrl(from, media, {
    test: (candidate) => teamsFileAccess(candidate, serviceUrl) !== null,
    where: "the Bot Connector or SharePoint's hosts",
  });
  const follow = (target: URL) => teamsFileAccess(target, serviceUrl) !== null;
  if (teamsFileAccess(url, serviceUrl) === 'anonymous')
    return openDownload(from, url.href, { signal, follow });
  let token: string;
  try {
    token = await source.tokens.get(signal);
  } catch (err) {
    if (signal.aborted) throw signal.reason;
    throw mediaUnavailable(from, (err as Error).message, { cause: err });
  }
  try {
    return await openDownload(from, url.href, {
      headers: { authorization: `Bearer ${token}` },
      signal,
      follow,
    });
  } catch (err) {
    const status = isSwitchboardError(err)
      ? (err.details as { status?: unknown } | undefined)?.status
      : undefined;
    // As for sends: a refused token is fetched anew next time.
    if (status === 401 || status === 403) source.tokens.forget(token);
    throw err;
  }
}
