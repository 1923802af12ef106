import {
  type RateDefaults,
  chatChannelFields,
  pacedOutboundSchema,
  platformApiUrl,
  platformSecret,
  policyOf,
} from '@switchboard/channel-kit/options';
import { z } from 'zod';

// The `./options` entry of the package: the schema of a `type: teams` entry of `channels[]`. It
// must not import the channel (nor jose), so that loading the configuration loads neither.

/**
 * Teams' documented limits per bot and conversation: 7 messages a second, 8 per 2 s, 60 per 30 s,
 * 1,800 per hour. A burst of 4, then 56 per 30 s, stays within the first three on any window; the
 * hourly one is left to Teams' 429 (its Retry-After is honoured). All conversations of a bot
 * together get 50 calls a second.
 */
export const TEAMS_RATE: RateDefaults = {
  enabled: true,
  per_bot: { limit: 50, per: '1s' },
  per_chat: { limit: 56, per: '30s', burst: 4 },
  per_group: null,
};

/** Where the Bot Framework publishes the keys that sign the activities it sends to bots. */
export const BOT_FRAMEWORK_OPENID_METADATA_URL =
  'https://login.botframework.com/v1/.well-known/openidconfiguration';

/** The client-credentials endpoint of a bot's tenant; multi-tenant bots use `botframework.com`. */
export function defaultTokenUrl(tenantId: string | undefined): string {
  return `https://login.microsoftonline.com/${encodeURIComponent(tenantId ?? 'botframework.com')}/oauth2/v2.0/token`;
}

/** `channels[]` with `type: teams`. */
export const TeamsChannelSchema = z
  .strictObject({
    ...chatChannelFields,
    type: z.literal('teams'),
    outbound: pacedOutboundSchema(TEAMS_RATE).prefault({}),
    /** The Microsoft App ID of the Azure Bot: the audience of inbound tokens, the client id of outbound ones. */
    app_id: z.string().trim().min(1, 'must not be empty'),
    /** The client secret of that app registration (its "password"). */
    app_password: platformSecret(),
    /** The Entra tenant of a single-tenant bot; unset for a multi-tenant one. */
    tenant_id: z.string().trim().min(1, 'must not be empty').optional(),
    /** Default: the Bot Framework's. */
    openid_metadata_url: platformApiUrl(),
    /** Default: `https://login.microsoftonline.com/<tenant_id or botframework.com>/oauth2/v2.0/token`. */
    token_url: platformApiUrl(),
  })
  .transform((channel) => ({
    id: channel.id,
    type: channel.type,
    appId: channel.app_id,
    appPassword: channel.app_password,
    openIdMetadataUrl: channel.openid_metadata_url ?? BOT_FRAMEWORK_OPENID_METADATA_URL,
    tokenUrl: channel.token_url ?? defaultTokenUrl(channel.tenant_id),
    policy: policyOf(channel),
    media: channel.media,
    outbound: channel.outbound,
  }));

/** A parsed `type: teams` channel: what `createTeamsChannel` takes as `config`. */
export type TeamsChannelConfig = z.output<typeof TeamsChannelSchema>;
