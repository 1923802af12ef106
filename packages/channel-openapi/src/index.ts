// The public surface of @switchboard/channel-openapi.

// The channel
export { createOpenApiChannel } from './channel.js';
export { IDEMPOTENCY_TTL_MS } from './routes.js';
export type { OpenApiChannelOptions } from './channel.js';
export type { ChannelEvents, EventOrigin } from './status-tracker.js';

// Shared with the app's other routes (admin API, root server)
export { bearerAuth, isLoopbackAddress } from './auth.js';
export type { AuthHook, BearerAuthOptions } from './auth.js';
export { httpErrorHandler, notFoundHandler, toHttpError } from './error-handler.js';
export type { HttpError } from './error-handler.js';
export { registerApiDocs } from './api-docs.js';
export type { ApiDocsOptions } from './api-docs.js';
export { createHttpServerShutdown, httpServerOptions } from './http-server.js';
export type { HttpServerShutdown } from './http-server.js';

// The HTTP shapes, for clients and tests
export { ErrorBodySchema, MessageViewSchema } from './api-schemas.js';
export type { ErrorBody, MessageView } from './api-schemas.js';
