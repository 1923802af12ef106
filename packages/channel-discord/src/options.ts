import {
  type RateDefaults,
  chatChannelFields,
  pacedOutboundSchema,
  platformApiUrl,
  platformSecret,
  policyOf,
} from '@switchboard/channel-kit/options';
import { z } from 'zod';

// The `./options` entry of the package: the schema of a `type: discord` entry of `channels[]`.
// It must not import discord.js nor the channel, so that loading the configuration loads neither.

/**
 * discord.js queues requests by Discord's own per-route buckets, so ours are off by default;
 * switched on they pace at Discord's global 50 a second and a channel's 5 per 5 s.
 */
export const DISCORD_RATE: RateDefaults = {
  enabled: false,
  per_bot: { limit: 50, per: '1s' },
  per_chat: { limit: 5, per: '5s' },
  per_group: null,
};

/** `channels[]` with `type: discord`. */
export const DiscordChannelSchema = z
  .strictObject({
    ...chatChannelFields,
    type: z.literal('discord'),
    outbound: pacedOutboundSchema(DISCORD_RATE).prefault({}),
    token: platformSecret(),
    api_url: platformApiUrl(),
  })
  .transform((channel) => ({
    id: channel.id,
    type: channel.type,
    token: channel.token,
    apiUrl: channel.api_url,
    policy: policyOf(channel),
    media: channel.media,
    outbound: channel.outbound,
  }));

/** A parsed `type: discord` channel: what `createDiscordChannel` takes as `config`. */
export type DiscordChannelConfig = z.output<typeof DiscordChannelSchema>;
