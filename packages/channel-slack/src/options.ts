import {
  type RateDefaults,
  chatChannelFields,
  pacedOutboundSchema,
  platformApiUrl,
  platformSecret,
  policyOf,
} from '@switchboard/channel-kit/options';
import { z } from 'zod';

// The `./options` entry of the package: the schema of a `type: slack` entry of `channels[]`. It
// must not import Bolt nor the channel, so that loading the configuration loads neither.

/**
 * Slack's chat.postMessage: 1 message a second per channel (short bursts tolerated); the
 * workspace-wide limit is undocumented ("several hundred a minute"), so the bot is kept at 300,
 * evenly like Telegram's.
 */
export const SLACK_RATE: RateDefaults = {
  enabled: true,
  per_bot: { limit: 5, per: '1s', burst: 1 },
  per_chat: { limit: 1, per: '1s' },
  per_group: null,
};

/** `channels[]` with `type: slack`. */
export const SlackChannelSchema = z
  .strictObject({
    ...chatChannelFields,
    type: z.literal('slack'),
    outbound: pacedOutboundSchema(SLACK_RATE).prefault({}),
    bot_token: platformSecret(),
    /** Verifies Events API requests; not used in Socket Mode. */
    signing_secret: platformSecret().optional(),
    api_url: platformApiUrl(),
    /** An app-level token (`xapp-…`) switches to Socket Mode. */
    app_token: platformSecret().optional(),
    /** Skips the auth.test call at start. */
    bot_user_id: z.string().min(1).optional(),
  })
  .superRefine((channel, ctx) => {
    if (channel.app_token === undefined && channel.signing_secret === undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['signing_secret'],
        message: 'required for the Events API (or set app_token for Socket Mode)',
      });
    }
  })
  .transform((channel) => ({
    id: channel.id,
    type: channel.type,
    botToken: channel.bot_token,
    /** How events arrive: signed HTTP requests, or Socket Mode's outgoing WebSocket. */
    transport:
      channel.app_token === undefined
        ? { mode: 'events_api' as const, signingSecret: channel.signing_secret as string }
        : { mode: 'socket_mode' as const, appToken: channel.app_token },
    apiUrl: channel.api_url,
    botUserId: channel.bot_user_id,
    policy: policyOf(channel),
    media: channel.media,
    outbound: channel.outbound,
  }));

/** A parsed `type: slack` channel: what `createSlackChannel` takes as `config`. */
export type SlackChannelConfig = z.output<typeof SlackChannelSchema>;
