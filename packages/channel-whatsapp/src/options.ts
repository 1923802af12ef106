import {
  type RateDefaults,
  chatChannelFields,
  pacedOutboundSchema,
  platformApiUrl,
  platformSecret,
  policyOf,
} from '@switchboard/channel-kit/options';
import { z } from 'zod';

// The `./options` entry of the package: the schema of a `type: whatsapp` entry of `channels[]`.
// It must not import the channel nor fastify, so that loading the configuration loads neither.

/**
 * The Cloud API's limits: 80 messages a second per business phone number (throughput, error
 * 130429), and one message every 6 seconds to the same user with bursts tolerated (pair rate,
 * error 131056). WhatsApp has no group chats here, so `per_group` is off.
 */
export const WHATSAPP_RATE: RateDefaults = {
  enabled: true,
  per_bot: { limit: 80, per: '1s' },
  per_chat: { limit: 1, per: '6s', burst: 45 },
  per_group: null,
};

/** The Graph API base the Cloud API is served from. */
export const GRAPH_API_URL = 'https://graph.facebook.com';

/** `channels[]` with `type: whatsapp`. */
export const WhatsAppChannelSchema = z
  .strictObject({
    ...chatChannelFields,
    type: z.literal('whatsapp'),
    outbound: pacedOutboundSchema(WHATSAPP_RATE).prefault({}),
    /** The business phone number's id (not the number itself), from the app's WhatsApp setup page. */
    phone_number_id: z.string().regex(/^\d+$/, 'expected the numeric id of the business phone number'),
    /** Sends replies (`Authorization: Bearer`): a system user's token for production. */
    access_token: platformSecret(),
    /** Verifies webhook notifications (`X-Hub-Signature-256`): the Meta app's secret. */
    app_secret: platformSecret(),
    /** Answers Meta's `GET` verification of the callback URL: chosen freely, entered in the app dashboard. */
    verify_token: platformSecret(),
    /** The Graph API base URL. Default: `https://graph.facebook.com`. */
    api_url: platformApiUrl(),
    /** The Graph API version in request paths. */
    api_version: z
      .string()
      .regex(/^v\d+\.\d+$/, 'expected a Graph API version such as v21.0')
      .default('v21.0'),
  })
  .transform((channel) => ({
    id: channel.id,
    type: channel.type,
    phoneNumberId: channel.phone_number_id,
    accessToken: channel.access_token,
    appSecret: channel.app_secret,
    verifyToken: channel.verify_token,
    apiUrl: (channel.api_url ?? GRAPH_API_URL).replace(/\/+$/, ''),
    apiVersion: channel.api_version,
    policy: policyOf(channel),
    media: channel.media,
    outbound: channel.outbound,
  }));

/** A parsed `type: whatsapp` channel: what `createWhatsAppChannel` takes as `config`. */
export type WhatsAppChannelConfig = z.output<typeof WhatsAppChannelSchema>;
