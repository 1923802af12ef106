import { elementFileUrl, openDownload } from '@switchboard/channel-kit';
import type { MediaDownload, MediaRef } from '@switchboard/core';

/** What opening a Slack file needs: the bot token, and the configured Web API URL, if any. */
export interface SlackMediaSource {
  channelId: string;
  botToken: string;
  /** `api_url`: its host also serves files (a proxy, or a test's fake). */
  apiUrl: string | undefined;
}

/** The host Slack serves private files from. */
const SLACK_FILE_HOST = 'files.slack.com';

/**
 * Whether the bot token may be sent to `url`: only over https to Slack's file host, or to the
 * host of the configured `api_url`. The URL comes from the event, which a forged or relayed
 * event could point anywhere; the token must never follow it there.
 */
function isSlackFileUrl(url: URL, apiUrl: string | undefined): boolean {
  if (url.protocol === 'https:' && url.hostname === SLACK_FILE_HOST) return true;
  return apiUrl !== undefined && url.origin === new URL(apiUrl).origin;
}

/**
 * Opens a Slack file (docs/design.md §2 "Media"): a streamed GET of its `url_private_download`
 * with the bot token as bearer — only where `isSlackFileUrl` allows, else SB_MEDIA_UNAVAILABLE
 * without a request. A redirect is followed without the token, and only to Slack's own hosts.
 */
export function openSlackMedia(
  source: SlackMediaSource,
  media: MediaRef,
  signal: AbortSignal,
): Promise<MediaDownload> {
  const from = { type: 'slack', channelId: source.channelId };
  let url: URL;
  try {
    url = elementFileUrl(from, media, {
      test: (candidate) => isSlackFileUrl(candidate, source.apiUrl),
      where: "Slack's file host",
    });
  } catch (err) {
    return Promise.reject(err);
  }
  return openDownload(from, url.href, {
    headers: { authorization: `Bearer ${source.botToken}` },
    signal,
    follow: (target) =>
      target.protocol === 'https:' &&
      (target.hostname === 'slack.com' || target.hostname.endsWith('.slack.com')),
  });
}
