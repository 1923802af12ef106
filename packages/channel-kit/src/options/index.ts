// The `./options` entry of @switchboard/channel-kit: the schemas of what every `channels[]` entry
// shares. It imports core and zod alone, so that loading the configuration loads no channel.
export { chatChannelFields, policyOf } from './chat-channel.js';
export { ChannelIdSchema } from './channel-id.js';
export { bearerCredential, platformSecret } from './credentials.js';
export { MediaOptionsSchema } from './media.js';
export type { MediaOptions } from './media.js';
export { OutboundSchema } from './outbound.js';
export { pacedOutboundSchema } from './paced-outbound.js';
export type { BucketRateInput, RateDefaults } from './paced-outbound.js';
export { platformApiUrl } from './platform-api-url.js';
