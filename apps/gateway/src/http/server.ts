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
import { type ChannelApps, mountChannelApps } from './channel-apps.js';
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
 * The gateway's one HTTP server, with its error answers, API docs and the channels' apps
 * registered and nothing else yet: the operator routes come next; each channel's routes live in
 * an app of its own (`ChannelApps`).
 */
export async function createHttpServer(
  config: Config,
  options: HttpServerOptions,
): Promise<{ server: FastifyInstance; shutdown: HttpServerShutdown; channelApps: ChannelApps }> {
  const build = () => {
    const app = Fastify(fastifyOptions(config, options.httpLogger)) as unknown as FastifyInstance;
    app.setErrorHandler(httpErrorHandler);
    app.setNotFoundHandler(notFoundHandler);
    // Who an admin request acts for, set by the admin check (`adminAuth`).
    app.decorateRequest('adminScope', null);
    return app;
  };
  const server = build();
  // Each connection holds a descriptor (a slow sender up to request_timeout, an idle keep-alive
  // one 72 s); past the cap Node closes a new one as soon as it accepts it. Node takes it only as
  // a property of its server, which fastify has built by now.
  server.server.maxConnections = config.server.maxConnections;
  const shutdown = createHttpServerShutdown(server);
  const channelApps = mountChannelApps(server, { build, shutdown, version: options.version });
  await registerApiDocs(server, {
    title: 'Switchboard',
    version: options.version,
    mounted: channelApps.apps,
    ...(config.admin.protect.includes('docs') ? { auth: options.operatorAuth } : {}),
  });
  return { server, shutdown, channelApps };
}

/** The options of the server and of every app it hands requests to. */
function fastifyOptions(config: Config, httpLogger: FastifyBaseLogger | undefined) {
  return {
    ...httpServerOptions(config.server),
    // Which peers may name the client in X-Forwarded-For: the address logged as `request.ip`.
    // The loopback check never believes it (@switchboard/http `isLoopbackClient`).
    trustProxy: config.server.trustProxy,
    loggerInstance: httpLogger,
    // Requests are not logged one by one: outcomes and metrics already account for each message.
    logController: new LogController({ disableRequestLogging: true }),
    // So requests share the root logger: a pino child per request (bindings and redaction set up
    // each time) cost more than the rare error line it would label; that line names the request.
    childLoggerFactory: (logger: FastifyBaseLogger) => logger,
  };
}
