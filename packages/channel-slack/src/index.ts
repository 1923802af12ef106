// The public surface of @switchboard/channel-slack: the factory the app wires, then the pure
// parts (signature check, normalizer, renderer) for tools and tests.
export { createSlackChannel } from './channel.js';
export type { SlackChannelOptions } from './channel.js';
export { probeSlackChannel } from './probe.js';
export { MAX_REQUEST_AGE_MS, slackSignature, verifySlackSignature } from './inbound/verify.js';
export type { SignatureProblem, SignedRequest } from './inbound/verify.js';
export { normalizeSlackEvent, renderSlackText } from './inbound/normalize.js';
export type { NormalizeContext } from './inbound/normalize.js';
export { MAX_CHUNK_CHARS, renderSlackReplies } from './outbound/render.js';
export type { SlackPostMessage } from './outbound/render.js';
