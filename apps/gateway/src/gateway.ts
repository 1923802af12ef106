import type { Config } from '@switchboard/config';
import {
  type ControllerObserver,
  type KeptOutcome,
  type Logger,
  type MessageTracer,
  type QueryPool,
  type SecretMasker,
  createOutcomeBus,
} from '@switchboard/core';
import { IDEMPOTENCY_TTL_MS } from '@switchboard/http';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { type ChannelEventFanOut, fanOutChannelEvents } from './channel-events.js';
import { createChannels } from './channels.js';
import { adminAuth } from './http/admin-auth.js';
import { registerOperatorRoutes } from './http/operator-routes.js';
import { createHttpServer } from './http/server.js';
import { forgetWhenRecorded, keptOutcomePolicy } from './kept-outcomes.js';
import { type GatewayParts, startGateway, stopGateway } from './lifecycle.js';
import { createLiveRouting } from './live-routing.js';
import { registerMediaRoutes } from './http/media-routes.js';
import { createMediaLinks } from './media-links.js';
import { CHANNEL_LEASE_TIMING } from './channel-lease-timing.js';
import { type FleetFollower, followFleetConfig } from './reload/fleet-config.js';
import { type ReloadResult, createLiveConfig } from './reload/live-config.js';
import { createHandoffs } from './handoffs.js';
import { createPipelines, poolPipelinesOf, poolTenantsOf } from './pipelines.js';
import { type Recorders, createRecorders } from './recorders.js';
import { DAY_MS, type Retention, createRetention } from './retention.js';
import { createScheduling } from './scheduling.js';
import { type Stores, openStores } from './stores.js';
import { isolateWorkers } from './worker-isolation.js';

export interface GatewayOptions {
  config: Config;
  /** The file the config came from: `SIGHUP` and `POST /admin/reload` re-read it. */
  configPath?: string;
  logger: Logger & { child(bindings: object): Logger };
  /** The root pino logger, for the errors fastify logs; omit to keep fastify quiet. */
  httpLogger?: FastifyBaseLogger;
  version?: string;
  /**
   * Hides the configured secrets in the error text of outcomes, and so of audit records and
   * message statuses (the logger masks its own lines). Default: none.
   */
  mask?: SecretMasker;
  /** Traces every message (`startTracing`); absent when tracing is off. */
  tracer?: MessageTracer;
  /** The files the config's `${file:…}` and `NAME_FILE` references read (`LoadedConfig`). */
  secretFiles?: readonly string[];
  /** Adds a reloaded file's secrets to those `mask` and the logger hide. Default: nothing. */
  addSecrets?(secrets: readonly string[]): void;
  /**
   * Every secret value of the configuration, reloads' included (`LoadedConfig.secrets`): media
   * links derive each channel's key from its own (`media-links.ts`). Default: none, so only
   * `server.media_secret` signs them.
   */
  secrets?: ReadonlySet<string>;
}

export interface Gateway {
  server: FastifyInstance;
  /** Recovers the journal, starts channels and the controller, and listens. Returns the bound address. */
  start(): Promise<string>;
  /** Drains and closes everything (docs/design.md §2 "Shutdown"); safe to call twice. */
  stop(): Promise<void>;
  /** Re-reads the config file and puts what changed in force (`LiveConfig.reload`). */
  reload(): Promise<ReloadResult>;
}

/**
 * Wires config → stores and pool, routing, pipelines and their recorders, the events the channels
 * follow, the HTTP server and the channels, scheduling, and the operator routes; starts and stops
 * them in order.
 */
export async function createGateway(options: GatewayOptions): Promise<Gateway> {
  const { config, logger } = options;
  // Before any store opens: a gateway whose workers could read its secrets writes nothing.
  const workerIdentities = isolateWorkers(config, {
    configPath: options.configPath,
    secretFiles: options.secretFiles ?? [],
  });

  const kept = keptOutcomePolicy(config, options.mask);
  // Bound once the configuration in force exists, below; a renewal calls it only after start.
  let fleet: FleetFollower | undefined;
  const { stores, pool } = await openStoresAndPool(config, logger, kept.keep, async () => fleet?.reconcile());
  const routing = createLiveRouting(config, { logger });
  // An outcome a shared store kept beside its settlement is let go once its records landed.
  const keptOutcomes = stores.keptOutcomes?.();
  const listenerFailed = (err: unknown) => logger.error({ err }, 'outcome listener failed');
  const outcomes = createOutcomeBus(
    listenerFailed,
    options.mask,
    keptOutcomes === undefined ? undefined : forgetWhenRecorded(kept, keptOutcomes),
  );

  const pipelines = createPipelines(config, {
    history: stores.history,
    logger,
    workerIdentities,
    retireTimeoutMs: config.shutdown.drainTimeoutMs,
  });
  const recorders = createRecorders(config, {
    stores,
    pool,
    pipelines: pipelines.pipelines,
    outcomes,
    logger,
    // Read at scrape time, once the controller and the channels below exist.
    running: () => scheduling.controller.running,
    channelRoles: () =>
      [...channels.ownership.owned.values()].map((channel) => ({ id: channel.id, role: channel.role() })),
  });
  const retention = recordRetention(config, stores, logger);

  // With a shared pool another replica may run the turn of a message this one accepted.
  const channelEvents = fanOutChannelEvents({
    outcomes,
    replicas: stores.replicaEvents(),
    pool,
    recordsShareOutboxCommit: stores.recordsShareOutboxCommit ?? false,
    onListenerError: listenerFailed,
  });

  // Tenants' tokens as the configuration in force has them: a reload changes them at once.
  const operatorAuth = adminAuth(config.admin.tokens, () => live.current().tenants);
  const {
    server,
    shutdown: httpShutdown,
    channelApps,
  } = await createHttpServer(config, {
    httpLogger: options.httpLogger,
    version: options.version ?? '0.0.0',
    operatorAuth,
  });
  const channels = await createChannels(config, {
    apps: channelApps,
    statuses: stores.statuses,
    logger,
    rateBuckets: stores.rateBuckets(),
    outbound: recorders.metrics.outbound,
    events: channelEvents.events,
    leases: stores.channelLeases(),
  });

  const mediaLinks = createMediaLinks({
    channels,
    mediaSecret: config.server.mediaSecret,
    secrets: options.secrets ?? new Set(),
    baseUrl: () => config.server.publicUrl ?? listenUrlOf(server, config.server),
  });
  registerMediaRoutes(server, {
    links: mediaLinks,
    logger,
    maxDownloads: config.server.maxMediaDownloads,
  });

  const outboxNow = stores.outboxNow ?? Date.now;
  const handoffs = createHandoffs({
    stores,
    pool,
    outcomes,
    // Read when a handoff is acted on, once the configuration in force exists below.
    current: () => live.current(),
    routing,
    observer: recorders.metrics.handoff,
    now: outboxNow,
    logger,
  });
  const scheduling = createScheduling({
    pool,
    pipelines,
    outcomes,
    stores,
    outboxNow,
    router: routing.router,
    tenantOf: routing.tenantOf,
    quotasOf: routing.quotasOf,
    handoffs: handoffs.desk,
    channels,
    queryFor: mediaLinks.queryFor,
    observer: turnObserver(recorders, channelEvents),
    deliveryEnded: recorders.metrics.deliveryEnded,
    logger,
    tracer: options.tracer,
  });

  const live = createLiveConfig(config, {
    configPath: options.configPath,
    channels,
    pipelines,
    pool,
    routing,
    pipelineDeps: { history: stores.history, logger },
    addSecrets: options.addSecrets ?? (() => {}),
    logger,
  });
  fleet =
    stores.fleetConfig === undefined
      ? undefined
      : followFleetConfig({
          store: stores.fleetConfig(),
          live,
          configPath: options.configPath,
          everyMs: CHANNEL_LEASE_TIMING.renewEveryMs,
          logger,
        });
  /** A reload asked for here: with replicas, it becomes the fleet's configuration. */
  async function reload(): Promise<ReloadResult> {
    const result = await live.reload();
    await fleet?.published();
    return result;
  }

  let draining = false;
  registerOperatorRoutes(server, config, {
    auth: operatorAuth,
    stores,
    pool,
    pipelines: pipelines.pipelines,
    channels: channels.adapters,
    ownership: channels.ownership,
    routing,
    reload,
    current: live.current,
    recorders,
    outcomes,
    outboxNow,
    handoffs: handoffs.desk,
    draining: () => draining,
    logger,
  });

  const parts: GatewayParts = {
    config,
    logger,
    stores,
    pool,
    outcomes,
    keptOutcomes,
    pipelines,
    channels,
    scheduling,
    retention,
    handoffs,
    server,
    httpShutdown,
    fleet,
  };
  let stopping: Promise<void> | undefined;
  return {
    server,
    reload,
    start: () => startGateway(parts),
    stop() {
      if (stopping === undefined) {
        draining = true;
        live.stop();
        stopping = stopGateway(parts);
      }
      return stopping;
    },
  };
}

/** `http://<host>:<port>` of the server: the port it is bound to (`port: 0` picks one). */
function listenUrlOf(server: FastifyInstance, { host, port }: Config['server']): string {
  const address = server.server.address();
  const bound = typeof address === 'object' && address !== null ? address.port : port;
  return `http://${host.includes(':') ? `[${host}]` : host}:${bound}`;
}

/**
 * Opens the configured stores and the query pool on them. A shared store may refuse this replica
 * (unreachable, or other limits than its peers'): the files and connections opened so far are
 * closed before the refusal is reported.
 */
async function openStoresAndPool(
  config: Config,
  logger: Logger,
  keptOutcome: KeptOutcome | undefined,
  reconcile: () => Promise<void>,
): Promise<{ stores: Stores; pool: QueryPool }> {
  const stores = await openStores(config, logger, { keptOutcome });
  const pool = await stores
    .createPool({
      concurrency: config.concurrency,
      limits: config.queue,
      pipelines: poolPipelinesOf(config),
      tenants: poolTenantsOf(config),
      logger,
      reconcile,
    })
    .catch(async (err: unknown) => {
      await stores.close();
      throw err;
    });
  return { stores, pool };
}

/**
 * Prunes audit records after `audit.retention_days`, and message statuses after a day: they
 * answer `GET /v1/messages/{id}` and `Idempotency-Key` retries, as long as a key can point at one
 * (long enough for any client to ask).
 */
function recordRetention(config: Config, stores: Stores, logger: Logger): Retention {
  return createRetention(
    [
      {
        name: 'audit',
        keepMs: config.audit.retentionDays * DAY_MS,
        prune: (before) => stores.auditLog.prune(before),
      },
      {
        name: 'message statuses',
        keepMs: IDEMPOTENCY_TTL_MS,
        prune: (before) => stores.statuses.prune(before),
      },
    ],
    logger,
  );
}

/** What hears of each turn: the recorders, and the channels through their events. */
function turnObserver(recorders: Recorders, channelEvents: ChannelEventFanOut): ControllerObserver {
  return {
    turnStarted(turn) {
      recorders.turns.turnStarted(turn);
      channelEvents.turnStarted(turn);
    },
    turnEnded: recorders.turns.turnEnded,
    turnRetried: recorders.turns.turnRetried,
    repliesStored: channelEvents.repliesStored,
  };
}
