import fastifySwagger from '@fastify/swagger';
import fastifySwaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import { jsonSchemaTransform } from 'fastify-type-provider-zod';
import type { AuthHook } from './auth.js';

/** Options of `registerApiDocs`. */
export interface ApiDocsOptions {
  /** `info.title` of the document. */
  title: string;
  /** `info.version` of the document: the gateway's version. */
  version: string;
  /** Runs first on every docs request (`/openapi.json`, `/docs` and its assets); none: open. */
  auth?: AuthHook;
}

/**
 * Serves the OpenAPI 3 document of every route at `GET /openapi.json` and Swagger UI at `/docs`
 * (docs/design.md §3). The document is built from the routes' zod schemas, so routes must be added after
 * this resolves — `@fastify/swagger` collects them as they are registered. Routes with plain JSON
 * schemas are not supported by the zod transform; give them zod schemas or none.
 */
export async function registerApiDocs(server: FastifyInstance, options: ApiDocsOptions): Promise<void> {
  await server.register(fastifySwagger, {
    openapi: {
      openapi: '3.0.3',
      info: { title: options.title, version: options.version },
      components: {
        securitySchemes: {
          bearerAuth: {
            type: 'http',
            scheme: 'bearer',
            description:
              'A channel api_key (channel routes) or admin.token (admin routes); with none configured, loopback clients need none.',
          },
        },
      },
    },
    transform: jsonSchemaTransform,
  });
  // A scope of their own, so that `auth` guards these routes and nothing else.
  await server.register(async (docs) => {
    if (options.auth !== undefined) docs.addHook('onRequest', options.auth);
    await docs.register(fastifySwaggerUi, { routePrefix: '/docs' });
    docs.get('/openapi.json', { schema: { hide: true } }, async () => server.swagger());
  });
}
