// The public surface of @switchboard/http: what the HTTP channel, the admin API and the console share.

// Who may call
export {
  bearerAuth,
  bearerTokenMatcher,
  credentialIdOf,
  isLoopbackAddress,
  isLoopbackClient,
} from './auth.js';
export type { AuthHook, BearerAuthOptions } from './auth.js';
export { isLoopbackHost, requestForgeryRefusal } from './request-forgery.js';

// Errors in one shape
export { errorBody, httpErrorHandler, notFoundHandler, toHttpError } from './error-handler.js';
export type { HttpError } from './error-handler.js';
export { ErrorBodySchema } from './error-body.js';
export type { ErrorBody } from './error-body.js';

// Requests
export { jsonBodyParser, parseJsonBody } from './json-body.js';
export { validatorCompiler } from './validator-compiler.js';
export { MAX_ID_CHARS, MAX_PARAM_LENGTH } from './id-length.js';
export { IDEMPOTENCY_TTL_MS, idempotencyFingerprint } from './idempotency.js';

// The server and its document
export { createHttpServerShutdown, httpServerOptions, zodSchemaController } from './http-server.js';
export type { HttpServerShutdown } from './http-server.js';
export { ServerSchema } from './server-schema.js';
export type { ServerConfig } from './server-schema.js';
export { collectApiDocs, registerApiDocs } from './api-docs.js';
export type { ApiDocsOptions } from './api-docs.js';
