import {
  type RateDefaults,
  chatChannelFields,
  pacedOutboundSchema,
  platformSecret,
  policyOf,
} from '@switchboard/channel-kit/options';
import { z } from 'zod';

// The `./options` entry of the package: the schema of a `type: feishu` entry of `channels[]`. It
// must not import the Lark SDK nor the channel, so that loading the configuration loads neither.

/**
 * Feishu's send limits: 50 calls a second per app, 5 a second to one user, 5 a second into one
 * group (shared by the bots in it).
 */
export const FEISHU_RATE: RateDefaults = {
  enabled: true,
  per_bot: { limit: 50, per: '1s' },
  per_chat: { limit: 5, per: '1s' },
  per_group: null,
};

/** The open platform's API bases: Feishu (China) and Lark (international). */
export const FEISHU_DOMAINS = {
  feishu: 'https://open.feishu.cn',
  lark: 'https://open.larksuite.com',
} as const;

/** What the long connection takes as an app id: the SDK silently does not connect with another. */
const LONG_CONNECTION_APP_ID = /^cli_[0-9a-fA-F]{16}$/;

/** `channels[]` with `type: feishu`. */
export const FeishuChannelSchema = z
  .strictObject({
    ...chatChannelFields,
    type: z.literal('feishu'),
    outbound: pacedOutboundSchema(FEISHU_RATE).prefault({}),
    app_id: z.string().min(1),
    app_secret: platformSecret(),
    /** `feishu`, `lark`, or the API base URL itself (a proxy, a test fake). */
    domain: z
      .union([
        z.enum(['feishu', 'lark']),
        // An http(s) URL as the kit's platformApiUrl takes it; its error names the other choices.
        z.url({ protocol: /^https?$/, error: 'must be feishu, lark or an http(s) URL' }),
      ])
      .default('feishu'),
    /**
     * How events arrive: `webhook`, signed HTTP requests to `/feishu/<id>`; `websocket`, the
     * long connection the gateway opens to the open platform (no public URL).
     */
    mode: z.enum(['webhook', 'websocket']).default('webhook'),
    /** Webhook mode: encrypts event bodies and signs each request (`X-Lark-Signature`). */
    encrypt_key: platformSecret().optional(),
    /** Webhook mode: carried in each event body; the only check when no encrypt key is set. */
    verification_token: platformSecret().optional(),
    /** The bot's open_id; skips the bot info call at start. */
    bot_open_id: z.string().min(1).optional(),
  })
  .superRefine((channel, ctx) => {
    if (channel.mode === 'websocket') {
      if (!LONG_CONNECTION_APP_ID.test(channel.app_id)) {
        ctx.addIssue({
          code: 'custom',
          path: ['app_id'],
          message: 'websocket mode needs the app id as the console shows it: cli_ and 16 hex digits',
        });
      }
      return;
    }
    if (channel.encrypt_key === undefined && channel.verification_token === undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['encrypt_key'],
        message: 'required for webhook mode (or at least verification_token)',
      });
    }
  })
  .transform((channel) => ({
    id: channel.id,
    type: channel.type,
    appId: channel.app_id,
    appSecret: channel.app_secret,
    apiUrl: (FEISHU_DOMAINS[channel.domain as keyof typeof FEISHU_DOMAINS] ?? channel.domain).replace(
      /\/+$/,
      '',
    ),
    mode: channel.mode,
    encryptKey: channel.encrypt_key,
    verificationToken: channel.verification_token,
    botOpenId: channel.bot_open_id,
    policy: policyOf(channel),
    media: channel.media,
    outbound: channel.outbound,
  }));

/** A parsed `type: feishu` channel: what `createFeishuChannel` takes as `config`. */
export type FeishuChannelConfig = z.output<typeof FeishuChannelSchema>;
