import { type ChannelConfig, type Config, DEFAULT_TENANT, type TenantConfig } from '@switchboard/config';
import {
  DISCARD,
  type InboundMessage,
  type Logger,
  type Router,
  SwitchboardError,
  type TenantQuotas,
  createRouter,
  tenantOfMessage,
} from '@switchboard/core';
import { type DryRunInput, type DryRunResult, dryRunRoute } from './admin/route-dry-run.js';
import { type RouteHits, createRouteHits } from './admin/route-hits.js';
import { type RoutingView, routingView } from './admin/routing-view.js';

/** `GET /admin/routing`: the default tenant's routing, and each other tenant's under `tenants`. */
export type TenantsRoutingView = RoutingView & { tenants: Array<RoutingView & { id: string }> };

/** The routing rules in force: counted as they route, swapped whole by a reload. */
export interface LiveRouting {
  /**
   * The router in force now: ingress asks for it for each message. It routes a message by its
   * tenant's routing (`message.tenant`, else its channel's tenant).
   */
  router(): Router;
  /** The tenant channel `channelId` belongs to; undefined for `default` (ingress stamps it). */
  tenantOf(channelId: string): string | undefined;
  /**
   * The quotas of `tenant` in force (docs/design.md §10), undefined when it has none or is no
   * longer configured: a reload's are in force for the next message.
   */
  quotasOf(tenant: string): TenantQuotas | undefined;
  /** The rules in force with their hit counts (`GET /admin/routing`). */
  view(): TenantsRoutingView;
  /** Routes `input` as if it came through `channel`, counting nothing (`POST /admin/route`). */
  dryRun(channel: ChannelConfig, input: DryRunInput): DryRunResult;
  /**
   * Where the rules in force send `message` (a replayed dead letter whose pipeline was removed);
   * throws SB_DEAD_LETTER_NOT_REPLAYABLE when they discard it.
   */
  reroute(message: InboundMessage): { pipeline: string; rule?: string };
  /**
   * False when `pipeline` is another tenant's than `message`'s (a pipeline moved between tenants
   * by a reload): a replay then routes the message again rather than run it there.
   */
  mayRun(message: InboundMessage, pipeline: string): boolean;
  /** Puts `config`'s rules in force; the pipelines they name must be configured by now. */
  apply(config: Config): void;
}

/** Each tenant's routing, compiled, and whose each channel is. */
interface TenantRouting {
  tenants: readonly TenantConfig[];
  router: Router;
  /**
   * Channel id → its tenant: the channels configured now, and those a reload removed, which keep
   * their last tenant (a message a removed channel is still draining is not routed by another's).
   */
  tenantOfChannel: ReadonlyMap<string, string>;
  /** The tenant of `message`: its own, else its channel's. */
  tenantOfMessage(message: InboundMessage): string;
  tenantOfPipeline: ReadonlyMap<string, string>;
  /** Tenant id → its quotas, for the tenants that have some. */
  quotas: ReadonlyMap<string, TenantQuotas>;
}

/**
 * The routing of `config`, swapped whole by a reload (`apply`). Hit counts are kept per tenant
 * and rule name across reloads, on this replica since its start.
 */
export function createLiveRouting(config: Config, options: { logger: Logger }): LiveRouting {
  const { logger } = options;
  const hits = new Map<string, RouteHits>();
  const hitsOf = (tenant: string) => {
    let counted = hits.get(tenant);
    if (counted === undefined) {
      counted = createRouteHits();
      hits.set(tenant, counted);
    }
    return counted;
  };
  let routing = tenantRouting(config, hitsOf);

  return {
    router: () => routing.router,
    tenantOf(channelId) {
      const tenant = routing.tenantOfChannel.get(channelId);
      return tenant === DEFAULT_TENANT ? undefined : tenant;
    },
    quotasOf: (tenant) => routing.quotas.get(tenant),
    view() {
      const views = routing.tenants.map((tenant) => ({
        id: tenant.id,
        ...routingView(tenant.routing, hitsOf(tenant.id)),
      }));
      // `config.tenants` always opens with the default tenant.
      const { id: _default, ...own } = views[0] as RoutingView & { id: string };
      return { ...own, tenants: views.slice(1) };
    },
    dryRun(channel, input) {
      // As ingress would stamp it: a dry run's message is its channel's tenant's.
      const tenant = routing.tenantOfChannel.get(channel.id);
      const stamped = (message: InboundMessage) =>
        tenant === undefined || tenant === DEFAULT_TENANT ? message : { ...message, tenant };
      const { router } = routing;
      return dryRunRoute(
        {
          route: (message) => router.route(stamped(message)),
          explain: (message) => router.explain(stamped(message)),
        },
        channel,
        input,
      );
    },
    reroute(message) {
      const decision = routing.router.route(message);
      if (decision.pipeline === DISCARD) {
        throw new SwitchboardError('SB_DEAD_LETTER_NOT_REPLAYABLE', {
          message: `its pipeline is no longer configured, and the routing in force discards it (${decision.rule ?? 'default'})`,
        });
      }
      return { pipeline: decision.pipeline, ...(decision.rule === null ? {} : { rule: decision.rule }) };
    },
    mayRun(message, pipeline) {
      const owner = routing.tenantOfPipeline.get(pipeline);
      return owner === undefined || owner === routing.tenantOfMessage(message);
    },
    apply(next) {
      routing = tenantRouting(next, hitsOf, routing.tenantOfChannel);
      logger.info(
        {
          rules: next.tenants.reduce((sum, tenant) => sum + tenant.routing.rules.length, 0),
          tenants: next.tenants.length,
        },
        'routing reloaded',
      );
    },
  };
}

/**
 * One router over every tenant's: a message goes by its own tenant's routing, which names only
 * that tenant's pipelines. A message whose tenant is no longer configured (a dead letter replayed
 * after its tenant was removed) is discarded rather than routed by another tenant's rules.
 */
function tenantRouting(
  config: Config,
  hitsOf: (tenant: string) => RouteHits,
  before: ReadonlyMap<string, string> = new Map(),
): TenantRouting {
  const routers = new Map(
    config.tenants.map((tenant) => [
      tenant.id,
      hitsOf(tenant.id).counting(createRouter(tenant.routing, { pipelines: tenant.pipelines })),
    ]),
  );
  const tenantOfChannel = new Map([
    ...before,
    ...config.tenants.flatMap((tenant) => tenant.channels.map((channel) => [channel, tenant.id] as const)),
  ]);
  const tenantOfPipeline = new Map(
    config.tenants.flatMap((tenant) => tenant.pipelines.map((pipeline) => [pipeline, tenant.id] as const)),
  );
  const quotas = new Map(
    config.tenants.flatMap(({ id, quotas: own, quotaReply }) =>
      own === undefined ? [] : [[id, { quotas: own, reply: quotaReply }] as const],
    ),
  );
  const orphan = createRouter({ default: DISCARD }, { pipelines: [] });
  // A message's tenant is its stamp, never its channel's tenant now: a channel moved to another
  // tenant by a reload must not take its earlier messages along.
  const routerOf = (message: InboundMessage): Router => routers.get(tenantOfMessage(message)) ?? orphan;
  return {
    tenants: config.tenants,
    tenantOfChannel,
    tenantOfMessage,
    tenantOfPipeline,
    quotas,
    router: {
      route: (message) => routerOf(message).route(message),
      explain: (message) => routerOf(message).explain(message),
    },
  };
}
