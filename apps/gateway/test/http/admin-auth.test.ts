import type { TenantConfig } from '@switchboard/config';
import { defaultTenantShare } from '@switchboard/core';
import { httpErrorHandler } from '@switchboard/http';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { type Tenancy, adminAuth, guardAdminScope, tenantFilterOf } from '../../src/http/admin-auth.js';

const tenant = (id: string, adminToken?: string): TenantConfig => ({
  id,
  channels: [],
  pipelines: [],
  routing: { default: '__discard__', rules: [] },
  share: defaultTenantShare(id),
  ...(adminToken === undefined ? {} : { adminToken }),
});

let server: FastifyInstance | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/**
 * A server whose `/admin/tenant` (tenancy `tenant`) answers the request's scope and the tenant a
 * `?tenant=` list would read, and whose `/admin/gateway` is gateway-wide.
 */
async function serve(
  tokens: { label: string; token: string }[],
  tenants: () => readonly TenantConfig[],
  extra?: (admin: FastifyInstance) => void,
): Promise<FastifyInstance> {
  const app = Fastify();
  server = app;
  app.setErrorHandler(httpErrorHandler);
  app.decorateRequest('adminScope', null);
  app.register(
    async (admin) => {
      guardAdminScope(admin, adminAuth(tokens, tenants));
      const config = (tenancy: Tenancy) => ({ config: { tenancy } });
      admin.get<{ Querystring: { tenant?: string } }>('/tenant', config('tenant'), async (request) => ({
        scope: request.adminScope,
        filter: tenantFilterOf(request, request.query.tenant) ?? null,
      }));
      admin.get('/gateway', config('gateway'), async () => ({ ok: true }));
      extra?.(admin);
    },
    { prefix: '/admin' },
  );
  await app.ready();
  return app;
}

const as = (token?: string) => (token === undefined ? {} : { authorization: `Bearer ${token}` });

describe('adminAuth', () => {
  describe('when global and tenant tokens are configured', () => {
    const tenants = [tenant('default'), tenant('acme', 'acme-key'), tenant('bravo', 'bravo-key')];

    it('scopes a tenant token to its tenant and a global token to the whole gateway', async () => {
      const app = await serve([{ label: 'ops', token: 'global-key' }], () => tenants);
      const acme = await app.inject({ url: '/admin/tenant', headers: as('acme-key') });
      expect(acme.json()).toEqual({ scope: { tenant: 'acme', label: 'tenant:acme' }, filter: 'acme' });
      const global = await app.inject({ url: '/admin/tenant?tenant=bravo', headers: as('global-key') });
      expect(global.json()).toEqual({ scope: { tenant: null, label: 'ops' }, filter: 'bravo' });
      expect((await app.inject({ url: '/admin/tenant', headers: as('nope') })).statusCode).toBe(401);
      expect((await app.inject({ url: '/admin/tenant' })).statusCode).toBe(401);
    });

    it('refuses a tenant token on a gateway-wide route and on another tenant’s filter with 403', async () => {
      const app = await serve([{ label: 'ops', token: 'global-key' }], () => tenants);
      for (const url of ['/admin/gateway', '/admin/tenant?tenant=bravo', '/admin/tenant?tenant=ghost']) {
        const answer = await app.inject({ url, headers: as('acme-key') });
        expect(answer.statusCode).toBe(403);
        expect(answer.json().error.code).toBe('SB_ADMIN_TENANT_FORBIDDEN');
        expect(answer.body).not.toContain('acme-key');
      }
      expect((await app.inject({ url: '/admin/gateway', headers: as('global-key') })).statusCode).toBe(200);
    });

    it('reads the tenants on each request: a token a reload adds, changes or removes counts at once', async () => {
      let current: readonly TenantConfig[] = tenants;
      const app = await serve([{ label: 'ops', token: 'global-key' }], () => current);
      current = [tenant('default'), tenant('acme', 'acme-key-2')];
      expect((await app.inject({ url: '/admin/tenant', headers: as('acme-key') })).statusCode).toBe(401);
      expect((await app.inject({ url: '/admin/tenant', headers: as('bravo-key') })).statusCode).toBe(401);
      expect((await app.inject({ url: '/admin/tenant', headers: as('acme-key-2') })).json().scope).toEqual({
        tenant: 'acme',
        label: 'tenant:acme',
      });
    });
  });

  describe('when no global token is set', () => {
    it('scopes a tenant token to its tenant, and a loopback client without one to the whole gateway', async () => {
      const app = await serve([], () => [tenant('default'), tenant('acme', 'acme-key')]);
      const acme = await app.inject({
        url: '/admin/gateway',
        headers: { host: '127.0.0.1', ...as('acme-key') },
      });
      expect(acme.statusCode).toBe(403);
      const loopback = await app.inject({ url: '/admin/tenant', headers: { host: '127.0.0.1' } });
      expect(loopback.json().scope).toEqual({ tenant: null, label: 'loopback' });
    });
  });

  describe('when an admin route declares no tenancy', () => {
    it('fails the server’s start, naming the route', async () => {
      await expect(
        serve(
          [],
          () => [],
          (admin) => admin.get('/undecided', async () => ({})),
        ),
      ).rejects.toThrow('GET /admin/undecided: an admin route must set config.tenancy');
    });
  });
});
