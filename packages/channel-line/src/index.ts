// The public surface of @switchboard/channel-line: the factory the app wires, then the pure
// parts (normalizer, retry key) for tools and tests.
export { createLineChannel } from './channel.js';
export type { LineChannelOptions } from './channel.js';
export { normalizeLineEvent } from './inbound/normalize.js';
export type { LineMessageEvent, NormalizeContext } from './inbound/normalize.js';
export { parseLineBody } from './inbound/parse-body.js';
export type { LineWebhookBody } from './inbound/parse-body.js';
export { MAX_MESSAGES_PER_CALL, MAX_TEXT_CHARS, REPLY_TOKEN_FRESH_MS } from './outbound/send.js';
export { retryKeyOf } from './outbound/retry-key.js';
