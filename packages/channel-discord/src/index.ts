// The public surface of @switchboard/channel-discord.

// The channel (what the app wires)
export { createDiscordChannel } from './channel.js';
export type { DiscordChannelOptions } from './channel.js';
export { probeDiscordChannel } from './probe.js';

// Pure halves, for tests and tools
export { normalizeMessage } from './inbound/normalize.js';
export type { NormalizeContext } from './inbound/normalize.js';
export type { DiscordAttachmentData, DiscordMessageData, DiscordUserData } from './inbound/message-data.js';
export { DISCORD_MESSAGE_LIMIT, renderReplies } from './outbound/render.js';
export type { DiscordMessageBody, RenderedMessage } from './outbound/render.js';
