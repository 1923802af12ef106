// The public surface of @switchboard/channel-feishu: the factory the app wires, then the pure
// parts (signature check, body opening, normalizer, renderer) for tools and tests.
export { createFeishuChannel } from './channel.js';
export type { FeishuChannelOptions } from './channel.js';
export { probeFeishuChannel } from './probe.js';
export { feishuSignature, verifyFeishuCall } from './inbound/verify.js';
export type { FeishuKeys } from './inbound/verify.js';
export { openFeishuBody, tokenOf } from './inbound/open-body.js';
export type { FeishuBody } from './inbound/open-body.js';
export { normalizeFeishuEvent } from './inbound/normalize.js';
export type { FeishuMessageEvent, NormalizeContext } from './inbound/normalize.js';
export { MAX_TEXT_CHARS, renderFeishuReplies } from './outbound/send.js';
export type { FeishuFile, FeishuPart, FeishuText } from './outbound/send.js';
