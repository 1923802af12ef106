// The public surface of @switchboard/channel-openapi.

// The channel
export { createOpenApiChannel } from './channel.js';
export type { OpenApiChannelOptions } from './channel.js';
export { createStatusTracker } from './status-tracker.js';
export type { ChannelEvents, EventOrigin } from './channel-events.js';
export type { StatusTracker } from './status-tracker.js';

// The HTTP shapes, for clients and tests
export { MessageViewSchema } from './api-schemas.js';
export type { MessageView } from './api-schemas.js';
