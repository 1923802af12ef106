// The public surface of @switchboard/channel-teams: the factory the app wires, then the pure
// parts (activity reader, normalizer, renderer) and the inbound check for tools and tests.
export { createTeamsChannel } from './channel.js';
export type { TeamsChannelOptions } from './channel.js';
export { probeTeamsChannel } from './probe.js';
export { parseActivity } from './inbound/activity.js';
export type { Activity, MessageActivity } from './inbound/activity.js';
export { BOT_FRAMEWORK_ISSUER, createTeamsAuthenticator } from './inbound/authenticate.js';
export type { TeamsAuthOptions, TeamsAuthenticator } from './inbound/authenticate.js';
export { normalizeTeamsActivity } from './inbound/normalize.js';
export type { NormalizeContext } from './inbound/normalize.js';
export { BOT_FRAMEWORK_SCOPE, createAccessTokens } from './outbound/access-token.js';
export type { AccessTokenOptions, AccessTokens } from './outbound/access-token.js';
export { replyTargetOf } from './outbound/connector.js';
export {
  MAX_INLINE_IMAGE_BYTES,
  MAX_TEXT_CHARS,
  messageActivityOf,
  renderTeamsReplies,
  teamsAttachmentRefusal,
} from './outbound/render.js';
export type { TeamsImage, TeamsPart } from './outbound/render.js';
export { activityRefKey, parseActivityRefKey } from './activity-ref.js';
export type { ActivityRef } from './activity-ref.js';
