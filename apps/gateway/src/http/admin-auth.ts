import type { TenantConfig } from '@switchboard/config';
import { SwitchboardError } from '@switchboard/core';
import {
  type AuthHook,
  bearerAuth,
  bearerTokenMatcher,
  jsonBodyParser,
  requestForgeryRefusal,
} from '@switchboard/http';
import type { FastifyInstance, FastifyRequest } from 'fastify';

/**
 * Who an admin request acts for (docs/design.md §10), resolved once by `adminAuth`: the whole
 * gateway (`admin.token`, `admin.tokens`, or loopback when none is set) or one tenant (its
 * `admin_token`).
 */
export interface AdminScope {
  /** The tenant the request is limited to; null for the whole gateway. */
  tenant: string | null;
  /** Who acts, as admin actions are recorded: the global token's label, `loopback`, or `tenant:<id>`. */
  label: string;
  /**
   * Whether the request's token still opens this scope under the configuration in force: a
   * long-lived answer (a conversation's event stream) asks again as it goes, so a reload that
   * removes or changes a tenant's token ends it. Global tokens change only with a restart.
   */
  held(): boolean;
}

/**
 * What a tenant token may do on an admin route, declared by every route as `config.tenancy`:
 * `tenant` — answers within the tenant of the request's scope (its records, sessions, routing;
 * another tenant's ids are 404); `gateway` — acts on or shows the whole gateway (reload, replicas,
 * queues): a tenant token gets 403 `SB_ADMIN_TENANT_FORBIDDEN`.
 */
export type Tenancy = 'tenant' | 'gateway';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by `adminAuth` on the routes it guards; null elsewhere. */
    adminScope: AdminScope | null;
  }
  interface FastifyContextConfig {
    /** The route's `Tenancy`; undefined counts as `gateway` (a tenant token is refused). */
    tenancy?: Tenancy;
  }
}

/** The tenants with an admin token, as a reload last left them, and the matcher of all tokens. */
interface TokenTable {
  tenants: readonly TenantConfig[];
  /** Tenant ids, in the order their tokens follow the global ones in `match`. */
  tenantIds: string[];
  match: (request: FastifyRequest) => number | undefined;
}

/**
 * The admin check (docs/design.md §7, §10): bearer `admin.token` or one of `admin.tokens` (the
 * whole gateway), a tenant's `admin_token` (that tenant only), or loopback clients only when no
 * global token is set — and then only requests a browser was not driven to send
 * (`requestForgeryRefusal`: a `Host` that is no loopback name, a state-changing request from
 * another origin), since every process on the machine passes as loopback, a browser showing a
 * hostile page included. Every token is compared with the presented one in constant time.
 * Sets `request.adminScope`; a tenant token on a route whose `config.tenancy` is not `tenant`
 * gets 403 `SB_ADMIN_TENANT_FORBIDDEN`. `tenants` is read on each request, so a reload that adds,
 * changes or removes a tenant's token takes effect at once.
 *
 * Guards the admin API, the console and what `admin.protect` closes (`/metrics`, `/readyz`,
 * `/docs`). Use it as an `onRequest` hook, so a request is refused before its query or body is
 * even parsed: an unauthenticated caller learns nothing about the route from a validation error.
 */
export function adminAuth(
  tokens: readonly { label: string; token: string }[],
  tenants: () => readonly TenantConfig[] = () => [],
): AuthHook {
  const bearer = bearerAuth({
    tokens: tokens.map((entry) => entry.token),
    realm: 'switchboard-admin',
    setting: 'admin.token',
  });
  // A bearer token is something a page cannot make the browser send (config turns "" into none).
  const global: AuthHook =
    tokens.length > 0
      ? bearer
      : (request, reply, done) =>
          bearer(request, reply, (err?: Error) => done(err ?? requestForgeryRefusal(request)));

  let table: TokenTable | undefined;
  const tableFor = (now: readonly TenantConfig[]): TokenTable => {
    if (table?.tenants === now) return table;
    const scoped = now.filter((tenant) => tenant.adminToken !== undefined);
    table = {
      tenants: now,
      tenantIds: scoped.map((tenant) => tenant.id),
      match: bearerTokenMatcher([
        ...tokens.map((entry) => entry.token),
        ...scoped.map((tenant) => tenant.adminToken as string),
      ]),
    };
    return table;
  };

  return (request, reply, done) => {
    const { tenantIds, match } = tableFor(tenants());
    const index = match(request) ?? -1;
    const tenant = index < tokens.length ? undefined : tenantIds[index - tokens.length];
    if (tenant === undefined) {
      global(request, reply, (err?: Error) => {
        if (err === undefined)
          request.adminScope = { tenant: null, label: tokens[index]?.label ?? 'loopback', held: () => true };
        done(err);
      });
      return;
    }
    const held = () => {
      const now = tableFor(tenants());
      return now.tenantIds[(now.match(request) ?? -1) - tokens.length] === tenant;
    };
    request.adminScope = { tenant, label: `tenant:${tenant}`, held };
    if (request.routeOptions.config.tenancy === 'tenant') return done();
    done(
      new SwitchboardError('SB_ADMIN_TENANT_FORBIDDEN', {
        message: `${request.method} ${request.routeOptions.url ?? request.url} acts on the whole gateway: a tenant's admin token may not call it`,
      }),
    );
  };
}

/**
 * Puts a plugin of admin routes behind `auth` and the shared JSON parser. `onRequest`, not
 * `preHandler`: a stranger's bad query gets 401, not a 400 describing the route. The shared
 * parser refuses a `__proto__` key with 400 naming where it is. Every route of the plugin must
 * declare its `config.tenancy`: one without fails the gateway's start, so no admin route is
 * added without a decision on what a tenant token sees of it.
 */
export function guardAdminScope(scope: FastifyInstance, auth: AuthHook): void {
  scope.addHook('onRoute', (route) => {
    const tenancy = (route.config as { tenancy?: Tenancy } | undefined)?.tenancy;
    if (tenancy !== 'tenant' && tenancy !== 'gateway')
      throw new Error(`${String(route.method)} ${route.url}: an admin route must set config.tenancy`);
  });
  scope.addHook('onRequest', auth);
  scope.removeContentTypeParser('application/json');
  scope.addContentTypeParser('application/json', { parseAs: 'string' }, jsonBodyParser);
}

/** The scope `adminAuth` resolved for `request` (it runs before every admin handler). */
export function scopeOf(request: FastifyRequest): AdminScope {
  if (request.adminScope === null) throw new SwitchboardError('SB_HTTP_UNAUTHORIZED');
  return request.adminScope;
}

/**
 * The tenant a list route filters by: what `?tenant=` asks for the whole gateway; the scope's own
 * tenant for a tenant token, which may name only its own (`?tenant=` of another: 403
 * `SB_ADMIN_TENANT_FORBIDDEN`, whether that tenant exists or not).
 */
export function tenantFilterOf(request: FastifyRequest, asked: string | undefined): string | undefined {
  const { tenant } = scopeOf(request);
  if (tenant === null || asked === undefined || asked === tenant) return tenant ?? asked;
  throw new SwitchboardError('SB_ADMIN_TENANT_FORBIDDEN', {
    message: `query.tenant: a tenant's admin token reads its own tenant only (${tenant})`,
  });
}

/**
 * Whether `request` may see what belongs to `tenant` (undefined: nobody's known): the whole
 * gateway sees everything, a tenant token its own tenant's only.
 */
export function mayAccess(request: FastifyRequest, owner: string | undefined): boolean {
  const { tenant } = scopeOf(request);
  return tenant === null || owner === tenant;
}
