import {
  OutboundSchema,
  chatChannelFields,
  platformApiUrl,
  platformSecret,
  policyOf,
} from '@switchboard/channel-kit/options';
import { z } from 'zod';

// The `./options` entry of the package: the schema of a `type: line` entry of `channels[]`. It
// must not import the LINE SDK nor the channel, so that loading the configuration loads neither.

/** `channels[]` with `type: line`. */
export const LineChannelSchema = z
  .strictObject({
    ...chatChannelFields,
    type: z.literal('line'),
    // LINE allows 2,000 sending calls a second per channel, more than one gateway makes: nothing
    // is paced, and a 429 is retried by the outbox.
    outbound: OutboundSchema.prefault({}),
    /** Verifies webhook requests (`x-line-signature`). */
    channel_secret: platformSecret(),
    /** Sends replies (`Authorization: Bearer`). */
    channel_access_token: platformSecret(),
    /**
     * Whether "Webhook redelivery" is on in the LINE Developers Console. Off (LINE's default), an
     * event answered with an error is never sent again, so one the gateway cannot take is
     * recorded as dropped and acknowledged; on, it is answered 503 and LINE redelivers it.
     */
    webhook_redelivery: z.boolean().default(false),
    /** The Messaging API base URL. Default: `https://api.line.me`. */
    api_url: platformApiUrl(),
    /** The base URL of the content of messages (images, files…). Default: `https://api-data.line.me`. */
    data_api_url: platformApiUrl(),
  })
  .transform((channel) => ({
    id: channel.id,
    type: channel.type,
    channelSecret: channel.channel_secret,
    channelAccessToken: channel.channel_access_token,
    webhookRedelivery: channel.webhook_redelivery,
    apiUrl: channel.api_url ?? 'https://api.line.me',
    dataApiUrl: channel.data_api_url ?? 'https://api-data.line.me',
    policy: policyOf(channel),
    media: channel.media,
    outbound: channel.outbound,
  }));

/** A parsed `type: line` channel: what `createLineChannel` takes as `config`. */
export type LineChannelConfig = z.output<typeof LineChannelSchema>;
