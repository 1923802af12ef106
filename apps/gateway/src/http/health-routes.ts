import type { AuthHook } from '@switchboard/http';
import type { Config } from '@switchboard/config';
import type { FastifyInstance } from 'fastify';
import type { Registry } from 'prom-client';

export interface Readiness {
  ready: boolean;
  /** `state`: a single-owner channel's role on this replica; `standby` is ready. */
  checks: Record<string, { ok: boolean; state?: 'active' | 'standby'; detail?: string }>;
}

export interface HealthDeps {
  readiness: () => Promise<Readiness>;
  /** prom-client's registry, built on the first scrape. */
  registry: () => Promise<Registry>;
  /** `admin.protect`: which of `/metrics` and `/readyz` need `auth` (`docs` is guarded elsewhere). */
  protect: Config['admin']['protect'];
  /** The admin check. */
  auth: AuthHook;
}

/**
 * `/healthz` (the process answers), `/readyz` (channels up, store reachable, no `process` pipeline failed, not draining),
 * `/metrics`. `/healthz` is always open: Docker's HEALTHCHECK and load balancers call it without
 * credentials, and it tells nothing about the deployment.
 */
export function registerHealthRoutes(server: FastifyInstance, deps: HealthDeps) {
  const guard = (endpoint: 'metrics' | 'readyz') =>
    deps.protect.includes(endpoint) ? { onRequest: deps.auth } : {};
  server.get('/healthz', { schema: { hide: true } }, async () => ({ status: 'ok' }));
  server.get('/readyz', { schema: { hide: true }, ...guard('readyz') }, async (_request, reply) => {
    const readiness = await deps.readiness();
    reply.code(readiness.ready ? 200 : 503);
    return { status: readiness.ready ? 'ready' : 'not_ready', checks: readiness.checks };
  });
  server.get('/metrics', { schema: { hide: true }, ...guard('metrics') }, async (_request, reply) => {
    const registry = await deps.registry();
    reply.header('content-type', registry.contentType);
    return registry.metrics();
  });
}
