// The public surface of @switchboard/channel-line: the factory the app wires, then the pure
// parts for tools and tests.
export { createLineChannel } from './channel.js';
export type { LineChannelOptions } from './channel.js';
export { probeLineChannel } from './probe.js';
export { normalizeLineEvent } from './inbound/normalize.js';
export type { LineMessageEvent, NormalizeContext } from './inbound/normalize.js';
export { MAX_TEXT_CHARS, lineAttachmentRefusal, renderLineReplies } from './outbound/render.js';
export type { LineMessage } from './outbound/render.js';
