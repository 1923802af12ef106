import {
  DEFAULT_TENANT,
  type Quota,
  type RoutingConfig,
  type TenantShare,
  defaultTenantShare,
  tenantShareOf,
} from '@switchboard/core';
import type { z } from 'zod';

// Tenants (docs/design.md §10): named namespaces of channels, pipelines and routing. The top-level
// sections form the tenant `default`. Channel and pipeline ids are unique across the whole file,
// so that every other part (channels, pipelines, the pool, reloads, records) keeps addressing
// them by id alone and only routing needs to know whose a channel is.

export { DEFAULT_TENANT };

/** One tenant as the gateway runs it: the ids of its channels and pipelines, and its routing. */
export interface TenantConfig {
  id: string;
  /** Bearer token of its admin scope (docs/design.md §10); absent when it has none. */
  adminToken?: string;
  /** Ids of its channels: a message arriving through one is routed by this tenant's routing. */
  channels: string[];
  /** Ids of its pipelines: the only ones its routing may name. */
  pipelines: string[];
  routing: RoutingConfig;
  /** Its part of the pool: `concurrency`, `weight`, `max_pending` (the default tenant's is the default). */
  share: TenantShare;
  /** Its quotas (docs/design.md §10); absent when it has none. */
  quotas?: Quota[];
  /** What a chat channel answers a sender past one of them; absent: nothing. */
  quotaReply?: string;
}

interface Section {
  /** Where the section is, as a zod path: `[]` for the top level, `['tenants', 2]` for a tenant. */
  at: (string | number)[];
  channels: unknown;
  pipelines: unknown;
}

/**
 * The top-level sections and each tenant's, read defensively: these checks also run when other
 * problems were found, so any part may be unparsed.
 */
function sectionsOf(config: { channels?: unknown; pipelines?: unknown; tenants?: unknown }): Section[] {
  const sections: Section[] = [{ at: [], channels: config.channels, pipelines: config.pipelines }];
  if (!Array.isArray(config.tenants)) return sections;
  config.tenants.forEach((tenant: unknown, index) => {
    const { channels, pipelines } = (tenant ?? {}) as Record<string, unknown>;
    sections.push({ at: ['tenants', index], channels, pipelines });
  });
  return sections;
}

const pathText = (path: readonly (string | number)[]) =>
  path
    .map((part, index) => (typeof part === 'number' ? `[${part}]` : index === 0 ? part : `.${part}`))
    .join('');

/**
 * Flags a value of `key` (an id, an HTTP prefix) given twice across the file, naming both places:
 * the second one is refused, since the first already answers to it.
 */
function checkUniqueAcross(
  sections: Section[],
  list: 'channels' | 'pipelines',
  key: string,
  problem: (value: string, earlier: string) => string,
  applies: (item: Record<string, unknown>) => boolean,
  ctx: z.RefinementCtx,
): void {
  const first = new Map<string, string>();
  for (const section of sections) {
    const items = section[list];
    if (!Array.isArray(items)) continue;
    items.forEach((item: unknown, index) => {
      const fields = (item ?? {}) as Record<string, unknown>;
      const value = fields[key];
      if (typeof value !== 'string' || !applies(fields)) return;
      const path = [...section.at, list, index, key];
      const earlier = first.get(value);
      if (earlier === undefined) first.set(value, pathText(path.slice(0, -1)));
      else ctx.addIssue({ code: 'custom', path, message: problem(value, earlier) });
    });
  }
}

/**
 * Ids of channels and pipelines, and the path prefixes of HTTP (`openapi`) channels, are unique
 * across the file; tenant ids are unique and none is `default`.
 */
export function checkTenants(
  config: { channels?: unknown; pipelines?: unknown; tenants?: unknown },
  ctx: z.RefinementCtx,
): void {
  const sections = sectionsOf(config);
  const all = () => true;
  checkUniqueAcross(
    sections,
    'channels',
    'id',
    (id, earlier) =>
      `duplicate channel id ${JSON.stringify(id)} (also ${earlier}): ids are unique across the file`,
    all,
    ctx,
  );
  checkUniqueAcross(
    sections,
    'pipelines',
    'id',
    (id, earlier) =>
      `duplicate pipeline id ${JSON.stringify(id)} (also ${earlier}): ids are unique across the file`,
    all,
    ctx,
  );
  // Each channel's routes are served by the one channel whose prefix a request falls under, so a
  // second channel on a prefix would never answer.
  checkUniqueAcross(
    sections,
    'channels',
    'prefix',
    (prefix, earlier) =>
      `prefix ${JSON.stringify(prefix)} is also ${earlier}'s: give each openapi channel its own`,
    (channel) => channel.type === 'openapi',
    ctx,
  );
  if (!Array.isArray(config.tenants)) return;
  const seen = new Map<string, number>();
  config.tenants.forEach((tenant: unknown, index) => {
    const id = ((tenant ?? {}) as { id?: unknown }).id;
    if (typeof id !== 'string') return;
    const earlier = seen.get(id);
    if (id === DEFAULT_TENANT)
      ctx.addIssue({
        code: 'custom',
        path: ['tenants', index, 'id'],
        message:
          '"default" is the tenant of the top-level channels, pipelines and routing: choose another id',
      });
    else if (earlier !== undefined)
      ctx.addIssue({
        code: 'custom',
        path: ['tenants', index, 'id'],
        message: `duplicate tenant id ${JSON.stringify(id)} (also tenants[${earlier}])`,
      });
    else seen.set(id, index);
  });
}

/** A tenant's quotas as parsed (`quotas`, `quota_reply`); exported for the declaration of `ConfigSchema`. */
export interface QuotaSections {
  quotas: Quota[];
  quota_reply?: string | undefined;
}

/** What the schema parsed: the top-level sections and each tenant's own, of the same types. */
interface Sections extends QuotaSections {
  channels: { id: string }[];
  pipelines: { id: string }[];
  routing: RoutingConfig;
  tenants: ({
    id: string;
    admin_token?: string | undefined;
    channels: { id: string }[];
    pipelines: { id: string }[];
    routing: RoutingConfig;
  } & Parameters<typeof tenantShareOf>[1] &
    QuotaSections)[];
}

/** A tenant's quotas as the gateway runs them: only when it has some. */
function quotasOf({ quotas, quota_reply }: QuotaSections): Pick<TenantConfig, 'quotas' | 'quotaReply'> {
  return {
    ...(quotas.length === 0 ? {} : { quotas }),
    ...(quota_reply === undefined ? {} : { quotaReply: quota_reply }),
  };
}

/**
 * Every tenant's channels and pipelines in one list each (the default tenant's first), and the
 * tenants (`default` first) by the ids of theirs: ids are unique across the file, so the rest of
 * the gateway runs them as one set and only routing asks whose a channel is.
 */
export function flattenTenants<Parsed extends Sections>(
  config: Parsed,
): Omit<Parsed, 'tenants' | keyof QuotaSections> & { tenants: TenantConfig[] } {
  // The top-level quotas are the tenant `default`'s, kept there only.
  const { quotas: _quotas, quota_reply: _reply, ...rest } = config;
  const others = rest as Omit<Parsed, 'tenants' | keyof QuotaSections>;
  const { channels, pipelines, routing, tenants } = config;
  const ids = (items: { id: string }[]) => items.map((item) => item.id);
  return {
    ...others,
    // A tenant's entries are parsed by the same schemas as the top-level ones.
    channels: [...channels, ...tenants.flatMap((tenant) => tenant.channels)] as Parsed['channels'],
    pipelines: [...pipelines, ...tenants.flatMap((tenant) => tenant.pipelines)] as Parsed['pipelines'],
    tenants: [
      {
        id: DEFAULT_TENANT,
        channels: ids(channels),
        pipelines: ids(pipelines),
        routing,
        share: defaultTenantShare(DEFAULT_TENANT),
        ...quotasOf(config),
      },
      ...tenants.map((tenant) => ({
        id: tenant.id,
        // `admin_token: "${ACME_ADMIN_TOKEN:-}"` yields "" when unset: that means none.
        ...(tenant.admin_token === undefined || tenant.admin_token === ''
          ? {}
          : { adminToken: tenant.admin_token }),
        channels: ids(tenant.channels),
        pipelines: ids(tenant.pipelines),
        routing: tenant.routing,
        share: tenantShareOf(tenant.id, tenant),
        ...quotasOf(tenant),
      })),
    ],
  };
}

/** The tenant whose channel `channelId` is; `default` for an id no tenant lists. */
export function tenantOfChannel(tenants: readonly TenantConfig[], channelId: string): string {
  return tenants.find((tenant) => tenant.channels.includes(channelId))?.id ?? DEFAULT_TENANT;
}
