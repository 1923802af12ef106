import type { Config } from '@switchboard/config';
import {
  type ChannelAdapter,
  type InboundMessage,
  type MediaClaims,
  type Query,
  SwitchboardError,
  isMediaElement,
  mediaKeyOf,
  mediaTokenChannel,
  signMediaToken,
  verifyMediaToken,
} from '@switchboard/core';
import type { Channels } from './channels.js';

type ChannelConfig = Config['channels'][number];
type MediaOptions = Extract<ChannelConfig, { media: unknown }>['media'];

/** A verified media link: what to open, through which channel, within which limits. */
export interface OpenableMedia {
  claims: MediaClaims;
  openMedia: NonNullable<ChannelAdapter['openMedia']>;
  options: MediaOptions;
}

/**
 * The gateway's media links (docs/design.md §2 "Media"): `media_url`s added to a turn's media
 * elements as it is handed to its pipeline (`queryFor`), and the check of a link when it is
 * followed (`open`).
 *
 * Each channel signs with a key of its own (`mediaKeyOf`), derived from `server.media_secret`
 * when set, else from the channel's own configured secrets (its tokens): every replica with the
 * same configuration derives the same key, with nothing stored, and it survives restarts.
 * Rotating a channel's token (or `media_secret`) ends its outstanding links, which live
 * `media.url_ttl` at most anyway.
 */
export interface MediaLinks {
  queryFor(query: Query): Query;
  /**
   * The media a token names, once its signature and expiry check out and its channel serves
   * files. Throws SB_MEDIA_TOKEN_INVALID, SB_MEDIA_TOKEN_EXPIRED or SB_MEDIA_NOT_FOUND.
   */
  open(token: string): OpenableMedia;
}

export interface MediaLinksOptions {
  channels: Pick<Channels, 'adapters' | 'configs'>;
  /** `server.media_secret`. */
  mediaSecret: string | undefined;
  /** Every secret value of the configuration in force (grows with reloads). */
  secrets: ReadonlySet<string>;
  /** The base of every link: `server.public_url`, else the address the server listens on. */
  baseUrl: () => string;
  now?: () => number;
}

/** Every string of a parsed channel config, in a fixed order. */
function stringsOf(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (Array.isArray(value)) return value.flatMap(stringsOf);
  if (typeof value === 'object' && value !== null)
    return Object.keys(value)
      .sort()
      .flatMap((key) => stringsOf((value as Record<string, unknown>)[key]));
  return [];
}

export function createMediaLinks(options: MediaLinksOptions): MediaLinks {
  const now = options.now ?? Date.now;
  // By config object: a reload that replaces a channel replaces its config, and so its key.
  const keys = new WeakMap<ChannelConfig, Buffer | null>();

  /** The channel's key, or null when there is nothing secret to derive it from. */
  function keyOf(config: ChannelConfig): Buffer | null {
    const known = keys.get(config);
    if (known !== undefined) return known;
    const secret =
      options.mediaSecret ??
      stringsOf(config)
        .filter((value) => options.secrets.has(value))
        .join('\0');
    const key = secret === '' ? null : mediaKeyOf(secret, config.id);
    keys.set(config, key);
    return key;
  }

  /** What links a channel's files need: its config, key and adapter; null when it serves none. */
  function servingChannel(channelId: string) {
    const config = options.channels.configs().find((each) => each.id === channelId);
    const openMedia = options.channels.adapters.get(channelId)?.openMedia;
    if (config === undefined || !('media' in config) || openMedia === undefined) return null;
    const key = keyOf(config);
    return key === null ? null : { config, key, media: config.media, openMedia };
  }

  function linked(message: InboundMessage, expiresAt: (ttlMs: number) => number): InboundMessage {
    if (!message.elements.some(isMediaElement)) return message;
    const channel = servingChannel(message.channel);
    if (channel === null) return message;
    const base = options.baseUrl();
    const expiresAtMs = expiresAt(channel.media.urlTtlMs);
    // An edit's files are still the original message's: Feishu serves them under its id.
    const messageId = message.event?.message_id ?? message.platform_message_id;
    return {
      ...message,
      elements: message.elements.map((element) => {
        if (!isMediaElement(element) || (element.file_id === undefined && element.url === undefined))
          return element;
        const { type, file_id, url, name, mime_type, size } = element;
        const token = signMediaToken(channel.key, {
          channel: message.channel,
          media: { type, file_id, url, name, mime_type, size, message_id: messageId },
          expiresAtMs,
        });
        return { ...element, media_url: `${base}/v1/media/${token}` };
      }),
    };
  }

  return {
    queryFor(query) {
      const nowMs = now();
      const expiresAt = (ttlMs: number) => nowMs + ttlMs;
      const messages = query.messages.map((message) => linked(message, expiresAt));
      return { ...query, message: messages[0] ?? query.message, messages };
    },

    open(token) {
      const channelId = mediaTokenChannel(token);
      const channel = servingChannel(channelId);
      if (channel === null)
        throw new SwitchboardError('SB_MEDIA_NOT_FOUND', {
          message: `no channel "${channelId}" serves media`,
          details: { channel: channelId },
        });
      const claims = verifyMediaToken(channel.key, token, now());
      return { claims, openMedia: channel.openMedia, options: channel.media };
    },
  };
}
