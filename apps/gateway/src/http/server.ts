import type { Config } from '@switchboard/config';
import {
  type AuthHook,
  type HttpServerShutdown,
  createHttpServerShutdown,
  httpErrorHandler,
  httpServerOptions,
  notFoundHandler,
  registerApiDocs,
} from '@switchboard/http';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, LogController } from 'fastify';

export interface HttpServerOptions {
  /** The root pino logger, for the errors fastify logs; omit to keep fastify quiet. */
  httpLogger?: FastifyBaseLogger;
  /** The version the API docs name. */
  version: string;
  /** The admin check, for `/docs` when `admin.protect` names it. */
  operatorAuth: AuthHook;
}

/**
 * The gateway's one HTTP server, with its error answers and API docs registered and nothing else
 * yet: the channels mount their routes next, the operator routes after them.
 */
export async function createHttpServer(
  config: Config,
  options: HttpServerOptions,
): Promise<{ server: FastifyInstance; shutdown: HttpServerShutdown }> {
  const server = Fastify({
    ...httpServerOptions(config.server),
    // Which peers may name the client in X-Forwarded-For: the address logged as `request.ip`.
    // The loopback check never believes it (@switchboard/http `isLoopbackClient`).
    trustProxy: config.server.trustProxy,
    loggerInstance: options.httpLogger,
    // Requests are not logged one by one: outcomes and metrics already account for each message.
    logController: new LogController({ disableRequestLogging: true }),
    // So requests share the root logger: a pino child per request (bindings and redaction set up
    // each time) cost more than the rare error line it would label; that line names the request.
    childLoggerFactory: (logger) => logger,
  }) as unknown as FastifyInstance;
  // Each connection holds a descriptor (a slow sender up to request_timeout, an idle keep-alive
  // one 72 s); past the cap Node closes a new one as soon as it accepts it. Node takes it only as
  // a property of its server, which fastify has built by now.
  server.server.maxConnections = config.server.maxConnections;
  server.setErrorHandler(httpErrorHandler);
  server.setNotFoundHandler(notFoundHandler);
  const shutdown = createHttpServerShutdown(server);
  await registerApiDocs(server, {
    title: 'Switchboard',
    version: options.version,
    ...(config.admin.protect.includes('docs') ? { auth: options.operatorAuth } : {}),
  });
  return { server, shutdown };
}
