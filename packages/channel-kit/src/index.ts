// The public surface of @switchboard/channel-kit.

// Option schemas of `channels[]`, also at `@switchboard/channel-kit/options`
export {
  ChannelIdSchema,
  OutboundSchema,
  bearerCredential,
  chatChannelFields,
  pacedOutboundSchema,
  platformApiUrl,
  platformSecret,
  policyOf,
} from './options/index.js';
export type { BucketRateInput, RateDefaults } from './options/index.js';

// Connection: single-owner connections (long polling, websockets) behind their channel leases
export { ownChannels } from './connection/single-owner.js';
export type {
  ChannelOwnershipOptions,
  ChannelRole,
  OwnedChannel,
  OwnedChannels,
} from './connection/single-owner.js';
