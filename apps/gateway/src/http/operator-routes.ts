import { type Config, DEFAULT_TENANT } from '@switchboard/config';
import type {
  ChannelAdapter,
  HandoffDesk,
  Logger,
  OutcomeBus,
  Pipeline,
  PipelineStatus,
  QueryPool,
} from '@switchboard/core';
import { DISCARD } from '@switchboard/core';
import type { AuthHook } from '@switchboard/http';
import type { FastifyInstance } from 'fastify';
import { createDeadLetterReplay } from '../admin/dead-letter-replay.js';
import { type ChannelHealth, overview } from '../admin/overview.js';
import type { OwnedChannels } from '@switchboard/channel-kit';
import type { LiveRouting } from '../live-routing.js';
import type { ReloadResult } from '../reload/live-config.js';
import type { Recorders } from '../recorders.js';
import { DAY_MS } from '../retention.js';
import type { Stores } from '../stores.js';
import { registerAdminRoutes } from './admin-routes.js';
import { registerConsoleRoutes } from './console-routes.js';
import { registerHandoffRoutes } from './handoff-routes.js';
import { registerHealthRoutes } from './health-routes.js';

/** The console's conversation streams: few operators, each with a view or two open. */
const HANDOFF_STREAM_LIMITS = { maxStreams: 100, pollMs: 500, maxBufferedBytes: 1 << 20 };

export interface OperatorRouteDeps {
  /** The admin check (`adminAuth`). */
  auth: AuthHook;
  stores: Stores;
  pool: QueryPool;
  pipelines: ReadonlyMap<string, Pipeline>;
  /** The channels of this replica (`OwnedChannels.adapters`). */
  channels: ReadonlyMap<string, ChannelAdapter>;
  ownership: OwnedChannels;
  routing: LiveRouting;
  /** Reloads the config file. */
  reload(): Promise<ReloadResult>;
  /** The configuration in force (a reload changes channels, pipelines and limits). */
  current(): Config;
  recorders: Recorders;
  outcomes: OutcomeBus;
  /** The reply outbox's clock, which a replayed dead letter's stored replies are stamped by. */
  outboxNow: () => number;
  /** Takes sessions over, sends operators' replies, hands sessions back. */
  handoffs: HandoffDesk;
  /** Whether the stop began: `/readyz` answers not ready from then on. */
  draining: () => boolean;
  logger: Logger;
}

/**
 * What operators reach over HTTP: `/healthz`, `/readyz` and `/metrics`, the admin API and the
 * console (docs/design.md §7).
 */
export function registerOperatorRoutes(
  server: FastifyInstance,
  config: Config,
  deps: OperatorRouteDeps,
): void {
  const { auth, stores, pool, pipelines, channels, ownership, recorders } = deps;

  /** The pipelines that report a state: those owning worker processes. */
  function pipelineStatuses(): Record<string, PipelineStatus> {
    const statuses: Record<string, PipelineStatus> = {};
    for (const [id, pipeline] of pipelines) {
      const status = pipeline.status?.();
      if (status !== undefined) statuses[id] = status;
    }
    return statuses;
  }

  /** Each channel's readiness, and for single-owner ones whether this replica holds it. */
  function channelHealth(): ChannelHealth[] {
    return [...channels].map(([id, channel]) => {
      const health = channel.health();
      const role = ownership.owned.get(id)?.role();
      return {
        id,
        ready: health.ready,
        ...(role === undefined ? {} : { state: role }),
        ...(health.detail ? { detail: health.detail } : {}),
      };
    });
  }

  registerHealthRoutes(server, {
    registry: recorders.metrics.registry,
    protect: config.admin.protect,
    auth,
    readiness: async () => {
      const checks: Record<string, { ok: boolean; detail?: string }> = {
        draining: { ok: !deps.draining() },
        store: await stores.health(),
      };
      for (const { id, ready, ...rest } of channelHealth()) checks[`channel.${id}`] = { ok: ready, ...rest };
      for (const [id, status] of Object.entries(pipelineStatuses())) {
        checks[`pipeline.${id}`] = { ok: status.ok, ...(status.detail ? { detail: status.detail } : {}) };
      }
      return { ready: Object.values(checks).every((check) => check.ok), checks };
    },
  });

  const tenantOfChannel = (channelId: string) => deps.routing.tenantOf(channelId) ?? DEFAULT_TENANT;
  /** The pipelines of `tenant` in force; every one for the whole gateway. */
  const pipelinesOf = (tenant: string | null): string[] =>
    tenant === null
      ? [...pipelines.keys()]
      : (deps.current().tenants.find((entry) => entry.id === tenant)?.pipelines ?? []);

  registerAdminRoutes(server, {
    auth,
    auditLog: stores.auditLog,
    pool,
    ...(stores.replicas === undefined ? {} : { replicas: stores.replicas }),
    pipelineStatuses,
    channelHolders: ownership.holders,
    reload: deps.reload,
    statuses: stores.statuses,
    trail: recorders.trail,
    storeText: config.audit.storeText,
    routing: (tenant) => {
      const view = deps.routing.view();
      if (tenant === null) return view;
      // A tenant token sees its own routing alone, in the place the default tenant's has.
      const { id: _id, ...own } = view.tenants.find((entry) => entry.id === tenant) ?? {
        id: tenant,
        rules: [],
        default: { pipeline: DISCARD, hits: 0 },
      };
      return { ...own, tenants: [] };
    },
    tenantOfChannel,
    pipelinesOf,
    tenantIds: () => deps.current().tenants.map((tenant) => tenant.id),
    channels: () => deps.current().channels,
    dryRun: deps.routing.dryRun,
    overview: async (tenant) =>
      overview({
        nowMs: Date.now(),
        rate: recorders.outcomeRate,
        stats: await pool.stats(),
        latency: recorders.turnLatency,
        pipelineIds: pipelinesOf(tenant),
        limits: { concurrency: deps.current().concurrency, queue: deps.current().queue },
        channels: channelHealth().filter(
          (channel) => tenant === null || tenantOfChannel(channel.id) === tenant,
        ),
        ...(tenant === null ? {} : { tenant }),
      }),
    replay: createDeadLetterReplay({
      auditLog: stores.auditLog,
      pool,
      outbox: stores.outbox,
      outcomes: deps.outcomes,
      logger: deps.logger,
      claimTtlMs: config.audit.retentionDays * DAY_MS,
      rerouted: (queued) =>
        pipelines.has(queued.pipeline) && deps.routing.mayRun(queued.message, queued.pipeline)
          ? null
          : deps.routing.reroute(queued.message),
      now: deps.outboxNow,
    }),
  });

  registerHandoffRoutes(server, {
    auth,
    desk: deps.handoffs,
    store: stores.handoffs,
    history: stores.history,
    tenantOfChannel,
    streams: HANDOFF_STREAM_LIMITS,
    logger: deps.logger,
  });

  registerConsoleRoutes(server, {
    auth: config.admin.token === undefined ? auth : undefined,
    logger: deps.logger,
  });
}
