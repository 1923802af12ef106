import type {
  ControllerObserver,
  HandoffObserver,
  HandoffStore,
  Delivery,
  DeliveryResult,
  Outcome,
  OutboundObserver,
  Pipeline,
  PoolStats,
  QueryPool,
  QueuedMessage,
  ReplyOutbox,
} from '@switchboard/core';
import { tenantOfMessage } from '@switchboard/core';
import type { Metric, Registry } from 'prom-client';
import { ActiveSessions } from './active-sessions.js';
import { countingCounter, countingHistogram } from './counting-metrics.js';

/** Just over the event-loop delay monitor's resolution (10 ms): each wait lets it tick. */
const FIRST_LAG_SAMPLE_MS = 11;
/** How long one scrape's pool counts serve the other gauges of that scrape, ms. */
const SCRAPE_STATS_MS = 100;

/** A session counts as active for this long after its last message (docs/design.md §2 "Metrics"). */
const ACTIVE_WINDOW_MS = 5 * 60_000;

/**
 * The Prometheus metrics of docs/design.md §2. Concurrency (`switchboard_inflight`, slots in use) and
 * sessions (`switchboard_active_sessions`) are named apart — a model gateway's dashboard confused them.
 *
 * Switchboard's counters count in plain memory from the start; prom-client's registry, which
 * formats them beside the gauges and Node's default metrics, is built on the first scrape:
 * loading prom-client (and the OpenTelemetry API it requires) took a tenth of the start's CPU
 * (bench/HISTORY.md#whole-path-pass-2-start). Default metrics that observe over time (GC durations,
 * event loop
 * lag) count from that first scrape; a build that fails is tried again by the next.
 */
export function createMetrics(
  pool: QueryPool,
  options: {
    /** The pipelines; those that bind sessions report how many (`switchboard_pipeline_sessions`). */
    pipelines: ReadonlyMap<string, Pipeline>;
    /** Turns this replica runs now (the controller's count). */
    running: () => number;
    /** The single-owner channels (`active` here or `standby`), read at scrape time. */
    channelRoles: () => Iterable<{ id: string; role: 'active' | 'standby' }>;
    /** True when other replicas share `pool` (`store: redis`). */
    sharedPool: boolean;
    /** The reply outbox, counted at scrape time (`switchboard_outbox_pending`). */
    outbox: ReplyOutbox;
    /** Sessions in handoff, counted at scrape time (`switchboard_sessions_in_handoff`). */
    handoffs: HandoffStore;
    /** With `store: sqlite`: the file's commits and statements so far (`switchboard_store_*_total`). */
    storeCounts?: () => { commits: number; statements: number };
  },
) {
  const activeSessions = new ActiveSessions(ACTIVE_WINDOW_MS);

  const messages = countingCounter({
    name: 'switchboard_messages_total',
    help: 'Messages by final outcome.',
    labelNames: ['channel', 'outcome', 'reason', 'tenant'] as const,
  });
  const queueWaits = countingHistogram({
    name: 'switchboard_queue_wait_seconds',
    help: 'Time from acceptance to the start of the turn that ran the message, by tenant.',
    labelNames: ['tenant'] as const,
    buckets: [0.005, 0.05, 0.25, 1, 2.5, 5, 15, 60, 300],
  });
  const pipelineDuration = countingHistogram({
    name: 'switchboard_pipeline_duration_seconds',
    help: 'Duration of turns by pipeline and result.',
    labelNames: ['pipeline', 'result'] as const,
    buckets: [0.01, 0.05, 0.1, 0.5, 1, 2.5, 5, 10, 30, 120],
  });
  const retries = countingCounter({
    name: 'switchboard_retries_total',
    help: 'Turns scheduled to run again after a retryable failure.',
    labelNames: ['pipeline'] as const,
  });
  // `scope` tells how to add replicas up: `replica` series are this process's own (sum them);
  // `cluster` ones are the shared pool's, the same on every replica (take the max, not the sum).
  const poolScope = options.sharedPool ? 'cluster' : 'replica';
  // The gauges below are collected together at each scrape: one `stats()` (a Redis round trip
  // with a shared pool) serves them all.
  let scraped: { at: number; stats: Promise<PoolStats> } | undefined;
  function poolStats(): Promise<PoolStats> {
    const now = Date.now();
    if (scraped === undefined || now - scraped.at > SCRAPE_STATS_MS)
      scraped = { at: now, stats: pool.stats() };
    return scraped.stats;
  }
  const deliveries = countingCounter({
    name: 'switchboard_deliveries_total',
    help: 'Attempts at sending a delivery of replies: delivered, retried (failed, tried again later) or failed (given up, a dead letter).',
    labelNames: ['channel', 'outcome'] as const,
  });

  const sendWait = countingHistogram({
    name: 'switchboard_send_wait_seconds',
    help: 'Time a send or edit waited for its pacing tokens (outbound.rate) before going to the platform.',
    labelNames: ['channel'] as const,
    buckets: [0.001, 0.05, 0.25, 1, 2.5, 5, 15, 60],
  });
  const platformRateLimited = countingCounter({
    name: 'switchboard_platform_rate_limited_total',
    help: 'Calls a platform answered 429 (Too Many Requests); pacing aims to keep this at 0.',
    labelNames: ['channel'] as const,
  });
  const eventsIgnored = countingCounter({
    name: 'switchboard_events_ignored_total',
    help: 'Edits, deletions and reactions that no event rule routed (outcome ignored/unrouted_event).',
    labelNames: ['channel', 'event'] as const,
  });
  const operatorResponse = countingHistogram({
    name: 'switchboard_operator_response_seconds',
    help: "Time from the oldest message an operator's reply answered to the reply, in handoff.",
    buckets: [5, 15, 30, 60, 120, 300, 600, 1800, 3600],
  });
  const handoff: HandoffObserver = {
    operatorResponded(waitedMs) {
      operatorResponse.series({}).observe(waitedMs / 1000);
    },
  };
  const counted = [
    messages,
    operatorResponse,
    queueWaits,
    pipelineDuration,
    retries,
    deliveries,
    sendWait,
    platformRateLimited,
    eventsIgnored,
  ];
  const outbound: OutboundObserver = {
    paced(channel, waitedMs) {
      sendWait.series({ channel }).observe(waitedMs / 1000);
    },
    rateLimited(channel) {
      platformRateLimited.series({ channel }).inc();
    },
  };

  const observer: ControllerObserver = {
    turnStarted(turn) {
      const now = Date.now();
      // A session is one tenant's: a turn's messages share it. Tenants are configured, so the
      // label stays bounded (docs/design.md §10).
      const head = turn.messages[0] as QueuedMessage;
      const queueWait = queueWaits.series({ tenant: tenantOfMessage(head.message) });
      for (const queued of turn.messages) queueWait.observe((now - queued.acceptedAt) / 1000);
    },
    turnEnded(turn, result, durationMs) {
      pipelineDuration.series({ pipeline: turn.pipeline, result }).observe(durationMs / 1000);
    },
    turnRetried(turn) {
      retries.series({ pipeline: turn.pipeline }).inc();
    },
  };

  /** Builds the registry on the first scrape (see above); the first scrape waits ~35 ms more. */
  async function buildRegistry(): Promise<Registry> {
    const { Counter, Gauge, Registry, collectDefaultMetrics } = await import('./prom-client-exports.js');
    const registry = new Registry();
    // The registry reads only name, help, type, aggregator, get() and reset() of a metric; its
    // parameter type names prom-client's own metric classes, hence the cast.
    for (const metric of counted) registry.registerMetric(metric as unknown as Metric);
    new Gauge({
      name: 'switchboard_inflight',
      help: 'Turns running now (concurrency slots in use): scope="replica" on this replica, scope="cluster" in the shared pool.',
      labelNames: ['scope'] as const,
      registers: [registry],
      async collect() {
        this.set({ scope: 'replica' }, options.running());
        if (options.sharedPool) this.set({ scope: 'cluster' }, (await poolStats()).inflight);
      },
    });
    new Gauge({
      name: 'switchboard_queue_pending',
      help: 'Messages waiting in the pool (scope="cluster": the shared pool, the same on every replica).',
      labelNames: ['scope'] as const,
      registers: [registry],
      async collect() {
        this.set({ scope: poolScope }, (await poolStats()).pending);
      },
    });
    new Gauge({
      name: 'switchboard_active_sessions',
      help: 'Sessions with a message in the last 5 minutes, on this replica.',
      registers: [registry],
      collect() {
        this.set(activeSessions.count(Date.now()));
      },
    });

    new Gauge({
      name: 'switchboard_channel_active',
      help: 'Single-owner connections (polling, gateway, socket) this replica runs: 1 active, 0 standby. Summed over replicas, each channel should read 1.',
      labelNames: ['channel'] as const,
      registers: [registry],
      collect() {
        for (const { id, role } of options.channelRoles())
          this.set({ channel: id }, role === 'active' ? 1 : 0);
      },
    });
    new Gauge({
      name: 'switchboard_pipeline_sessions',
      help: 'Sessions bound to a worker of a process pipeline (held context; apart from switchboard_inflight).',
      labelNames: ['pipeline'] as const,
      registers: [registry],
      collect() {
        for (const [id, pipeline] of options.pipelines) {
          const status = pipeline.status?.();
          if (status !== undefined) this.set({ pipeline: id }, status.sessions);
        }
      },
    });

    new Gauge({
      name: 'switchboard_sessions_in_handoff',
      help: 'Sessions an operator has taken over: scope="cluster" with a shared store (the same on every replica), else "replica".',
      labelNames: ['scope'] as const,
      registers: [registry],
      async collect() {
        this.set({ scope: poolScope }, await options.handoffs.count());
      },
    });

    new Gauge({
      name: 'switchboard_outbox_pending',
      help: 'Deliveries of replies stored and not yet delivered or given up, per channel.',
      labelNames: ['channel'] as const,
      registers: [registry],
      async collect() {
        // A channel whose outbox emptied reads 0, not its last count.
        this.reset();
        for (const [channel, count] of Object.entries(await options.outbox.pending()))
          this.set({ channel }, count);
      },
    });
    const { storeCounts } = options;
    if (storeCounts !== undefined) {
      new Counter({
        name: 'switchboard_store_commits_total',
        help: 'Transactions committed to the SQLite file of store.path (WAL commits) since the start.',
        registers: [registry],
        collect() {
          this.reset();
          this.inc(storeCounts().commits);
        },
      });
      new Counter({
        name: 'switchboard_store_statements_total',
        help: 'SQL statements run on the SQLite file of store.path, reads included, since the start.',
        registers: [registry],
        collect() {
          this.reset();
          this.inc(storeCounts().statements);
        },
      });
    }
    // Last: its observers (GC, event-loop delay) start here, so a build that failed started none.
    // Unprefixed: `process_resident_memory_bytes`, `nodejs_eventloop_lag_seconds`,
    // `nodejs_gc_duration_seconds`… are the names every Node dashboard and alert rule expects.
    collectDefaultMetrics({ register: registry });
    // The event-loop delay monitor it starts records from its second 10 ms tick; read before a
    // sample, the first scrape would report a lag minimum of 9.2e9 s and a NaN mean. Three short
    // waits in a row get ticks in even when the loop is busy in between.
    for (let wait = 0; wait < 3; wait += 1) {
      await new Promise((resolve) => setTimeout(resolve, FIRST_LAG_SAMPLE_MS));
    }
    return registry;
  }
  let registry: Promise<Registry> | undefined;

  return {
    /** prom-client's registry of every metric, built on the first call. */
    registry: () =>
      (registry ??= buildRegistry().catch((err: unknown) => {
        // Not kept: the next scrape builds it again.
        registry = undefined;
        throw err;
      })),
    observer,
    /** What the handoff desk reports (operator response time). */
    handoff,
    /** What the chat channels report about their platform calls. */
    outbound,
    deliveryEnded(delivery: Delivery, result: DeliveryResult) {
      deliveries.series({ channel: delivery.channel, outcome: result }).inc();
    },
    recordOutcome(outcome: Outcome) {
      const labels = {
        channel: outcome.message.channel,
        outcome: outcome.kind,
        reason: outcome.reason ?? '',
        tenant: tenantOfMessage(outcome.message),
      };
      messages.series(labels).inc();
      const { event } = outcome.message;
      if (outcome.reason === 'unrouted_event' && event !== undefined)
        eventsIgnored.series({ channel: outcome.message.channel, event: event.type }).inc();
      activeSessions.touch(outcome.session, outcome.at);
    },
  };
}
