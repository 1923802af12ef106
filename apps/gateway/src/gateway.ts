import { type Config, loadConfig } from '@switchboard/config';
import {
  type Logger,
  type MessageTracer,
  type PipelineStatus,
  type Router,
  type SecretMasker,
  SwitchboardError,
  createController,
  createIngress,
  createOutcomeBus,
  createReplySender,
  createReplyStream,
  createRouter,
} from '@switchboard/core';
import {
  IDEMPOTENCY_TTL_MS,
  createHttpServerShutdown,
  httpErrorHandler,
  httpServerOptions,
  notFoundHandler,
  registerApiDocs,
} from '@switchboard/http';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, LogController } from 'fastify';
import { createAuditRecorder } from './audit-recorder.js';
import { fanOutChannelEvents } from './channel-events.js';
import { ownChannels } from './channel-ownership.js';
import { createChannels } from './channels.js';
import { adminAuth } from './http/admin-auth.js';
import { createDeadLetterReplay } from './admin/dead-letter-replay.js';
import { registerAdminRoutes } from './http/admin-routes.js';
import { registerConsoleRoutes } from './http/console-routes.js';
import { registerHealthRoutes } from './http/health-routes.js';
import { forgetWhenRecorded, keptOutcomePolicy, recoverKeptOutcome } from './kept-outcomes.js';
import { createMessageTrail } from './admin/message-trail.js';
import { createMetrics } from './metrics.js';
import { createOutcomeRate } from './admin/outcome-rate.js';
import { type ChannelHealth, overview } from './admin/overview.js';
import { dryRunRoute } from './admin/route-dry-run.js';
import { createRouteHits } from './admin/route-hits.js';
import { routingView } from './admin/routing-view.js';
import { createTurnLatency } from './admin/turn-latency.js';
import { createPipelines } from './pipelines.js';
import { DAY_MS, createRetention } from './retention.js';
import { openStores } from './stores.js';
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
}

export interface Gateway {
  server: FastifyInstance;
  /** Recovers the journal, starts channels and the controller, and listens. Returns the bound address. */
  start(): Promise<string>;
  /** Drains and closes everything (docs/design.md §2 "Shutdown"); safe to call twice. */
  stop(): Promise<void>;
  /** Re-reads the config file and swaps the routing rules; a bad file throws and keeps the old rules. */
  reloadRouting(): Promise<{ rules: number }>;
}

/** Wires config → stores, pool, controller, channels and the HTTP server. */
export async function createGateway(options: GatewayOptions): Promise<Gateway> {
  const { config, logger } = options;
  // Before any store opens: a gateway whose workers could read its secrets writes nothing.
  const workerIdentities = isolateWorkers(config, {
    configPath: options.configPath,
    secretFiles: options.secretFiles ?? [],
  });
  const kept = keptOutcomePolicy(config, options.mask);
  const stores = await openStores(config, logger, { keptOutcome: kept.keep });
  const policies = new Map(config.pipelines.map((pipeline) => [pipeline.id, pipeline.policy]));
  // A shared store may refuse this replica (unreachable, or other limits than its peers'): the
  // files and connections opened so far are closed before the refusal is reported.
  const pool = await stores
    .createPool({
      concurrency: config.concurrency,
      limits: config.queue,
      pipelines: [...policies.values()],
      logger,
    })
    .catch(async (err: unknown) => {
      await stores.close();
      throw err;
    });
  const pipelineIds = config.pipelines.map((pipeline) => pipeline.id);
  const routeHits = createRouteHits();
  let routing = config.routing;
  let router: Router = routeHits.counting(createRouter(routing, { pipelines: pipelineIds }));

  // An outcome a shared store kept beside its settlement is let go once its records landed.
  const keptOutcomes = stores.keptOutcomes?.();
  const outcomes = createOutcomeBus(
    (err) => logger.error({ err }, 'outcome listener failed'),
    options.mask,
    keptOutcomes === undefined ? undefined : forgetWhenRecorded(kept, keptOutcomes),
  );
  const pipelines = createPipelines(config, { history: stores.history, logger, workerIdentities });
  const metrics = createMetrics(pool, {
    pipelines,
    // Read at scrape time, once the controller below exists.
    running: () => controller.running,
    channelRoles: () =>
      [...ownership.owned.values()].map((channel) => ({ id: channel.id, role: channel.role() })),
    sharedPool: config.store.kind === 'redis',
    outbox: stores.outbox,
  });
  const audit = createAuditRecorder({ auditLog: stores.auditLog, config: config.audit, logger });
  // Its write joins the commit that ends the message; the others hear of an outcome once committed.
  outcomes.subscribe(audit.record, { stores: true });
  outcomes.subscribe(metrics.recordOutcome);
  // What the console reads besides the stores: in memory, per replica, lost on restart.
  const trail = createMessageTrail({
    storeText: config.audit.storeText,
    recordIgnored: config.audit.recordIgnored,
  });
  const outcomeRate = createOutcomeRate();
  const turnLatency = createTurnLatency();
  outcomes.subscribe(trail.recordOutcome);
  outcomes.subscribe(outcomeRate.record);
  // Statuses answer `GET /v1/messages/{id}` and `Idempotency-Key` retries: they are kept as long
  // as a key can point at one (a day, long enough for any client to ask).
  const retention = createRetention(
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
  // With a shared pool another replica may run the turn of a message this one accepted.
  const channelEvents = fanOutChannelEvents({
    outcomes,
    replicas: stores.replicaEvents(),
    pool,
    recordsShareOutboxCommit: stores.recordsShareOutboxCommit ?? false,
    httpChannels: new Set(
      config.channels.filter((channel) => channel.type === 'openapi').map((channel) => channel.id),
    ),
  });

  const server = Fastify({
    ...httpServerOptions(config.server),
    // Which peers may name the client in X-Forwarded-For: the address logged as `request.ip`.
    // The loopback check never believes it (@switchboard/http `isLoopbackClient`).
    trustProxy: config.server.trustProxy,
    loggerInstance: options.httpLogger,
    // Requests are not logged one by one: outcomes and metrics already account for each message.
    logController: new LogController({ disableRequestLogging: true }),
    // So requests share the root logger: a pino child per request (bindings and redaction set up
    // each time) cost more than the rare error line it would label; that line names the request.
    childLoggerFactory: (logger) => logger,
  }) as unknown as FastifyInstance;
  // Each connection holds a descriptor (a slow sender up to request_timeout, an idle keep-alive
  // one 72 s); past the cap Node closes a new one as soon as it accepts it. Node takes it only as
  // a property of its server, which fastify has built by now.
  server.server.maxConnections = config.server.maxConnections;
  server.setErrorHandler(httpErrorHandler);
  server.setNotFoundHandler(notFoundHandler);
  const httpShutdown = createHttpServerShutdown(server);
  const operatorAuth = adminAuth(config.admin.token);
  await registerApiDocs(server, {
    title: 'Switchboard',
    version: options.version ?? '0.0.0',
    ...(config.admin.protect.includes('docs') ? { auth: operatorAuth } : {}),
  });

  const {
    adapters: configured,
    policyOf,
    outboundPolicies,
    editIntervalMsOf,
  } = await createChannels(config, {
    server,
    statuses: stores.statuses,
    logger,
    rateBuckets: stores.rateBuckets(),
    outbound: metrics.outbound,
    events: channelEvents.events,
  });
  // Single-consumer connections run only where this replica holds the channel's lease (§5).
  const ownership = ownChannels(configured, { ...stores.channelLeases(), logger });
  const channels = ownership.adapters;

  const ingress = createIngress({
    pool,
    router: () => router,
    outcomes,
    channelPolicy: policyOf,
    refuseWhen: stores.refusal,
    tracer: options.tracer,
  });

  const outboxNow = stores.outboxNow ?? Date.now;
  const controller = createController({
    pool,
    pipelines,
    policies,
    outcomes,
    logger,
    tracer: options.tracer,
    outbox: stores.outbox,
    // Deliveries are stamped on the clock the sender claims them by (a skewed replica would hold
    // every reply back by its skew); the same clock as the host's unless the outbox is shared.
    now: outboxNow,
    // Answers stream into previews where the channel shows them (docs/design.md §4 "Streaming").
    streamReplies: (query, turnLogger) => {
      const preview = channels.get(query.message.channel)?.preview;
      const editIntervalMs = editIntervalMsOf(query.message.channel);
      const finishTimeoutMs = outboundPolicies.get(query.message.channel)?.sendTimeoutMs;
      if (preview === undefined || editIntervalMs === undefined || finishTimeoutMs === undefined)
        return undefined;
      return createReplyStream({
        preview: (text, draft, signal) => preview(query.message, text, draft, signal),
        editIntervalMs,
        finishTimeoutMs,
        logger: turnLogger,
      });
    },
    observer: {
      turnStarted(turn) {
        metrics.observer.turnStarted?.(turn);
        trail.observer.turnStarted(turn);
        channelEvents.turnStarted(turn);
      },
      turnEnded(turn, result, durationMs) {
        metrics.observer.turnEnded?.(turn, result, durationMs);
        trail.observer.turnEnded(turn, result, durationMs);
        turnLatency.turnEnded(turn, result, durationMs);
      },
      turnRetried(turn, delayMs) {
        metrics.observer.turnRetried?.(turn, delayMs);
        trail.observer.turnRetried(turn, delayMs);
      },
      repliesStored: channelEvents.repliesStored,
    },
  });

  // Sends what the outbox holds, outside any turn (docs/design.md §2 "Outbox").
  const sender = createReplySender({
    outbox: stores.outbox,
    now: outboxNow,
    channel: (id) => channels.get(id),
    policy: (id) => outboundPolicies.get(id),
    outcomes,
    logger,
    observer: { deliveryEnded: metrics.deliveryEnded },
  });

  let draining = false;
  let stopping: Promise<void> | undefined;

  async function reloadRouting(): Promise<{ rules: number }> {
    if (options.configPath === undefined) {
      throw new SwitchboardError('SB_CONFIG_NOT_FOUND', { message: 'no configuration file to reload' });
    }
    const next = await loadConfig(options.configPath);
    const nextRouter = createRouter(next.routing, { pipelines: pipelineIds });
    router = routeHits.counting(nextRouter);
    routing = next.routing;
    logger.info({ rules: next.routing.rules.length, path: options.configPath }, 'routing reloaded');
    return { rules: next.routing.rules.length };
  }

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
    registry: metrics.registry,
    protect: config.admin.protect,
    auth: operatorAuth,
    readiness: async () => {
      const checks: Record<string, { ok: boolean; detail?: string }> = {
        draining: { ok: !draining },
        store: await stores.health(),
      };
      for (const { id, ready, ...rest } of channelHealth()) checks[`channel.${id}`] = { ok: ready, ...rest };
      for (const [id, status] of Object.entries(pipelineStatuses())) {
        checks[`pipeline.${id}`] = { ok: status.ok, ...(status.detail ? { detail: status.detail } : {}) };
      }
      return { ready: Object.values(checks).every((check) => check.ok), checks };
    },
  });

  registerAdminRoutes(server, {
    auth: operatorAuth,
    auditLog: stores.auditLog,
    pool,
    ...(stores.replicas === undefined ? {} : { replicas: stores.replicas }),
    pipelineStatuses,
    channelHolders: ownership.holders,
    reload: reloadRouting,
    statuses: stores.statuses,
    trail,
    storeText: config.audit.storeText,
    routing: () => routingView(routing, routeHits),
    channels: config.channels,
    dryRun: (channel, input) => dryRunRoute(router, channel, input),
    overview: async () =>
      overview({
        nowMs: Date.now(),
        rate: outcomeRate,
        stats: await pool.stats(),
        latency: turnLatency,
        pipelineIds,
        limits: { concurrency: config.concurrency, queue: config.queue },
        channels: channelHealth(),
      }),
    replay: createDeadLetterReplay({
      auditLog: stores.auditLog,
      pool,
      outbox: stores.outbox,
      outcomes,
      logger,
      claimTtlMs: config.audit.retentionDays * DAY_MS,
      now: outboxNow,
    }),
  });

  registerConsoleRoutes(server, {
    auth: config.admin.token === undefined ? operatorAuth : undefined,
    logger,
  });

  async function stop(): Promise<void> {
    const { drainTimeoutMs } = config.shutdown;
    // One deadline for the whole stop: the container's stop grace counts from the signal.
    const deadline = Date.now() + drainTimeoutMs;
    draining = true;
    // First: an outcome recovered from here on would reach no status writer once the channels
    // stop. Those it leaves are another replica's once their lease ends.
    keptOutcomes?.stopRecovering();
    logger.info({ drainTimeoutMs }, 'draining');
    httpShutdown.drain();
    for (const channel of channels.values()) channel.drain?.();
    await controller.stop({ drainTimeoutMs });
    // Replies of the turns that finished in the drain went out meanwhile; now the sender stops
    // claiming, and its sends under way get what is left of the drain.
    await sender.stop({ drainTimeoutMs: Math.max(0, deadline - Date.now()) });
    // Nothing adds replies any more: what an outbox in memory still holds is dropped.
    await sender.dropUnsent();
    // After the drain no turn runs: worker processes get what is left of the drain to exit.
    await Promise.all(
      [...pipelines.values()].map((pipeline) =>
        pipeline.stop?.({ timeoutMs: Math.max(0, deadline - Date.now()) }),
      ),
    );
    for (const channel of channels.values()) await channel.stop();
    retention.stop();
    await httpShutdown.close(deadline - Date.now());
    await stores.close();
    logger.info({}, 'stopped');
  }

  return {
    server,
    reloadRouting,
    async start() {
      const recovered = await pool.recover();
      if (recovered.length > 0) logger.info({ recovered: recovered.length }, 'journal recovered');
      retention.start();
      for (const [id, channel] of channels) {
        const own = recovered.filter((queued) => queued.message.channel === id);
        await channel.start({ ingress, logger, recovered: own });
      }
      controller.start();
      sender.start();
      // Outcomes whose settling replica died before recording them are recorded here.
      keptOutcomes?.start(recoverKeptOutcome(config, outcomes));
      const address = await server.listen({ host: config.server.host, port: config.server.port });
      logger.info({ address, channels: [...channels.keys()], store: config.store.kind }, 'listening');
      return address;
    },
    stop() {
      stopping ??= stop();
      return stopping;
    },
  };
}
