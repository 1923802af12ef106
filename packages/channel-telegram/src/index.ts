// The public surface of @switchboard/channel-telegram.

// The channel
export { createTelegramChannel } from './channel.js';
export type { TelegramChannelOptions } from './channel.js';
export { probeTelegramChannel } from './probe.js';

// Pure parts, for tests and tools
export { ALLOWED_UPDATES, normalizeUpdate, platformMessageId } from './inbound/normalize.js';
export type { BotIdentity, NormalizeContext, NormalizeResult } from './inbound/normalize.js';
export { parseUpdate } from './inbound/parse-update.js';
export { TELEGRAM_TEXT_LIMIT, renderReplies } from './outbound/render.js';
export type { SendMessageParams } from './outbound/render.js';
export { PACED_METHODS, pacedChatOfId } from './outbound/pace-calls.js';
export { toChannelError } from './errors.js';
