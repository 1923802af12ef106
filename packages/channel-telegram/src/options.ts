import {
  type RateDefaults,
  chatChannelFields,
  pacedOutboundSchema,
  platformApiUrl,
  platformSecret,
  policyOf,
} from '@switchboard/channel-kit/options';
import { secretField } from '@switchboard/core';
import { z } from 'zod';

// The `./options` entry of the package: the schema of a `type: telegram` entry of `channels[]`.
// It must not import grammY nor the channel, so that loading the configuration loads neither.

/**
 * Telegram's documented limits: 30 messages a second per bot, 1 per chat, 20 a minute per group.
 * The bot's 30 go out evenly (burst 1): a burst of 30 requests leaves the process spread out
 * anyway and reaches Telegram bunched, looking faster than it was sent.
 */
export const TELEGRAM_RATE: RateDefaults = {
  enabled: true,
  per_bot: { limit: 30, per: '1s', burst: 1 },
  per_chat: { limit: 1, per: '1s' },
  per_group: { limit: 20, per: '1m' },
};

/** `channels[]` with `type: telegram`. */
export const TelegramChannelSchema = z
  .strictObject({
    ...chatChannelFields,
    type: z.literal('telegram'),
    outbound: pacedOutboundSchema(TELEGRAM_RATE).prefault({}),
    token: platformSecret(),
    mode: z.enum(['polling', 'webhook']).default('polling'),
    api_root: platformApiUrl(),
    /** Required with `mode: webhook`; with `url` the channel calls setWebhook itself. */
    webhook: z
      .strictObject({
        // Telegram's own limits for X-Telegram-Bot-Api-Secret-Token.
        secret_token: secretField(z.string().regex(/^[A-Za-z0-9_-]{1,256}$/, 'use 1-256 of A-Z a-z 0-9 _ -')),
        url: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).optional(),
      })
      .optional(),
  })
  .superRefine((channel, ctx) => {
    if (channel.mode === 'webhook' && channel.webhook === undefined) {
      ctx.addIssue({ code: 'custom', path: ['webhook'], message: 'required when mode is webhook' });
    }
  })
  .transform((channel) => ({
    id: channel.id,
    type: channel.type,
    token: channel.token,
    mode: channel.mode,
    apiRoot: channel.api_root,
    webhook: channel.webhook && { secretToken: channel.webhook.secret_token, url: channel.webhook.url },
    policy: policyOf(channel),
    media: channel.media,
    outbound: channel.outbound,
  }));

/** A parsed `type: telegram` channel: what `createTelegramChannel` takes as `config`. */
export type TelegramChannelConfig = z.output<typeof TelegramChannelSchema>;
