import type { FastifyInstance } from 'fastify';
import type { Registry } from 'prom-client';

export interface Readiness {
  ready: boolean;
  checks: Record<string, { ok: boolean; detail?: string }>;
}

/** `/healthz` (the process answers), `/readyz` (channels up, store reachable, not draining), `/metrics`. */
export function registerHealthRoutes(
  server: FastifyInstance,
  deps: { readiness: () => Promise<Readiness>; registry: Registry },
) {
  server.get('/healthz', { schema: { hide: true } }, async () => ({ status: 'ok' }));
  server.get('/readyz', { schema: { hide: true } }, async (_request, reply) => {
    const readiness = await deps.readiness();
    reply.code(readiness.ready ? 200 : 503);
    return { status: readiness.ready ? 'ready' : 'not_ready', checks: readiness.checks };
  });
  server.get('/metrics', { schema: { hide: true } }, async (_request, reply) => {
    reply.header('content-type', deps.registry.contentType);
    return deps.registry.metrics();
  });
}
