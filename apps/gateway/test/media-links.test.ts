import type { Config } from '@switchboard/config';
import {
  type ChannelAdapter,
  type InboundMessage,
  type Query,
  mediaKeyOf,
  verifyMediaToken,
} from '@switchboard/core';
import { inboundMessage } from '@switchboard/testkit/inbound-message';
import { describe, expect, it } from 'vitest';
import { createMediaLinks } from '../src/media-links.js';

const NOW = Date.UTC(2026, 0, 1);
const SECRET = 'a media secret of some length';

function linksOf() {
  const config = {
    id: 'fs',
    type: 'feishu',
    media: { maxBytes: 25_000_000, urlTtlMs: 3_600_000, timeoutMs: 30_000 },
  } as unknown as Config['channels'][number];
  const adapter = { openMedia: async () => ({}) } as unknown as ChannelAdapter;
  return createMediaLinks({
    channels: { adapters: new Map([['fs', adapter]]), configs: () => [config] } as never,
    mediaSecret: SECRET,
    secrets: new Set(),
    baseUrl: () => 'http://gateway',
    now: () => NOW,
  });
}

/** The media reference the link of `message`'s only media element carries. */
function linkedRef(message: InboundMessage) {
  const query = { message, messages: [message] } as unknown as Query;
  const element = linksOf()
    .queryFor(query)
    .messages[0]?.elements.find((each) => 'media_url' in each);
  const token = (element as { media_url: string }).media_url.split('/v1/media/')[1] as string;
  return verifyMediaToken(mediaKeyOf(SECRET, 'fs'), token, NOW).media;
}

describe('createMediaLinks queryFor', () => {
  const image = { type: 'image' as const, file_id: 'img_v3_1' };

  describe('when a message carries a file', () => {
    it('signs the platform id of the message into its link', () => {
      const message = inboundMessage({ channel: 'fs', platform_message_id: 'om_1', elements: [image] });
      expect(linkedRef(message)).toEqual({ type: 'image', file_id: 'img_v3_1', message_id: 'om_1' });
    });
  });

  describe('when an edit carries a file', () => {
    it("signs the original message's id, under which the platform keeps its files", () => {
      const message = inboundMessage({
        channel: 'fs',
        platform_message_id: 'om_1:edited:1767225600',
        elements: [image],
        event: { type: 'edited', message_id: 'om_1' },
      });
      expect(linkedRef(message).message_id).toBe('om_1');
    });
  });
});
