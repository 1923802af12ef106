import fastifySwagger from '@fastify/swagger';
import Fastify, {
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  LogController,
} from 'fastify';
import fastifyPlugin from 'fastify-plugin';
import { jsonSchemaTransform } from 'fastify-type-provider-zod';
import type { AuthHook } from './auth.js';
import { httpErrorHandler, notFoundHandler } from './error-handler.js';
import { zodSchemaController } from './http-server.js';

/** Options of `registerApiDocs`. */
export interface ApiDocsOptions {
  /** `info.title` of the document. */
  title: string;
  /** `info.version` of the document: the gateway's version. */
  version: string;
  /** Runs first on every docs request (`/openapi.json`, `/docs` and its assets); none: open. */
  auth?: AuthHook;
  /**
   * The apps the server hands requests to (`collectApiDocs` on each): their
   * paths and schemas join the document. Read on every request, so an app mounted later shows.
   */
  mounted?: () => Iterable<FastifyInstance>;
}

type ApiDocument = ReturnType<FastifyInstance['swagger']>;
/** The parts of an OpenAPI 3 document (`collectApiDocs` builds that version) that merge. */
interface Parts {
  paths?: object;
  components?: { schemas?: object };
}

/** `server`'s document with the paths and component schemas of `mounted` added. */
function mergedDocument(server: FastifyInstance, mounted: Iterable<FastifyInstance>): ApiDocument {
  const document = server.swagger() as Parts;
  const paths = { ...document.paths };
  const schemas = { ...document.components?.schemas };
  for (const app of mounted) {
    const part = app.swagger() as Parts;
    Object.assign(paths, part.paths);
    Object.assign(schemas, part.components?.schemas);
  }
  return { ...document, paths, components: { ...document.components, schemas } } as ApiDocument;
}

/**
 * Swagger UI in a server of its own, never listening: `/docs` requests are handed to it, their
 * socket included, once the outer routes' hooks (auth) passed. Built on the first of them, so
 * that a gateway nobody reads the docs of never loads Swagger UI and its static file server (a
 * tenth of the start's work), yet the UI keeps its own routes and streams its assets (a slow
 * reader holds no whole file in memory). The inner server answers errors in the gateway's shape;
 * the outer `onSend` hooks do not run for these answers (the drain's `Connection: close` among
 * them: a docs connection may stay open until `close` cuts it).
 */
function lazySwaggerUi(
  server: FastifyInstance,
  document: () => ApiDocument,
): (request: FastifyRequest, reply: FastifyReply) => Promise<void> {
  let ui: Promise<FastifyInstance> | undefined;
  async function build(): Promise<FastifyInstance> {
    const { default: fastifySwaggerUi } = await import('@fastify/swagger-ui');
    // Logged as on the outer server: no line per request, the one logger shared.
    const app = Fastify({
      schemaController: zodSchemaController,
      loggerInstance: server.log,
      logController: new LogController({ disableRequestLogging: true }),
      childLoggerFactory: (logger) => logger,
    }) as unknown as FastifyInstance;
    app.setErrorHandler(httpErrorHandler);
    app.setNotFoundHandler(notFoundHandler);
    // Stands in for `@fastify/swagger`, which Swagger UI requires: its `/docs/json` and
    // `/docs/yaml` serve the gateway's document.
    await app.register(
      fastifyPlugin(
        async (scope) => {
          scope.decorate('swagger', document);
        },
        { name: '@fastify/swagger' },
      ),
    );
    await app.register(fastifySwaggerUi, { routePrefix: '/docs' });
    await app.ready();
    return app;
  }
  return async (request, reply) => {
    ui ??= build().catch((err: unknown) => {
      ui = undefined;
      throw err;
    });
    const app = await ui;
    reply.hijack();
    app.routing(request.raw, reply.raw);
  };
}

/** The `@fastify/swagger` options of a document titled by `info`, built from the zod schemas. */
function swaggerOptionsOf(info: Pick<ApiDocsOptions, 'title' | 'version'>) {
  return {
    openapi: {
      openapi: '3.0.3',
      info: { title: info.title, version: info.version },
      components: {
        securitySchemes: {
          bearerAuth: {
            type: 'http' as const,
            scheme: 'bearer',
            description:
              'A channel api_key (channel routes) or admin.token (admin routes); with none configured, loopback clients need none.',
          },
        },
      },
    },
    transform: jsonSchemaTransform,
  };
}

/**
 * Collects the OpenAPI document of `app`'s routes as they are registered (`app.swagger()`), for
 * an app whose requests another server hands over: that server's `registerApiDocs` serves it
 * (`mounted`). Call before the routes are added.
 */
export async function collectApiDocs(
  app: FastifyInstance,
  info: Pick<ApiDocsOptions, 'title' | 'version'>,
): Promise<void> {
  await app.register(fastifySwagger, swaggerOptionsOf(info));
}

/**
 * Serves the OpenAPI 3 document of every route at `GET /openapi.json` and Swagger UI at `/docs`
 * (docs/design.md §3). The document is built from the routes' zod schemas, so routes must be added after
 * this resolves — `@fastify/swagger` collects them as they are registered; it is built on its
 * first request. Routes with plain JSON schemas are not supported by the zod transform; give them
 * zod schemas or none.
 */
export async function registerApiDocs(server: FastifyInstance, options: ApiDocsOptions): Promise<void> {
  // Registered here, not through `collectApiDocs`: a caller that does not wait for this (it
  // readies the server next) must find both registrations queued before it boots.
  await server.register(fastifySwagger, swaggerOptionsOf(options));
  const { mounted } = options;
  const document = () => (mounted === undefined ? server.swagger() : mergedDocument(server, mounted()));
  // A scope of their own, so that `auth` guards these routes and nothing else.
  await server.register(async (docs) => {
    if (options.auth !== undefined) docs.addHook('onRequest', options.auth);
    const swaggerUi = lazySwaggerUi(server, document);
    docs.get('/docs', { schema: { hide: true } }, swaggerUi);
    docs.get('/docs/*', { schema: { hide: true } }, swaggerUi);
    docs.get('/openapi.json', { schema: { hide: true } }, async () => document());
  });
}
