import type { Config } from '@switchboard/config';
import type { ControllerObserver, Logger, OutcomeBus, Pipeline, QueryPool } from '@switchboard/core';
import { type MessageTrail, createMessageTrail } from './admin/message-trail.js';
import { type OutcomeRate, createOutcomeRate } from './admin/outcome-rate.js';
import { type TurnLatency, createTurnLatency } from './admin/turn-latency.js';
import { createAuditRecorder } from './audit-recorder.js';
import { createMetrics } from './metrics.js';
import type { Stores } from './stores.js';

/** What records the outcomes and turns besides the message statuses. */
export interface Recorders {
  /** The Prometheus metrics (`/metrics`), also told of deliveries and the chat channels' calls. */
  metrics: ReturnType<typeof createMetrics>;
  /** This replica's recent turns and outcomes per message (`GET /admin/messages/{id}`). */
  trail: MessageTrail;
  /** Messages per minute by outcome (the overview). */
  outcomeRate: OutcomeRate;
  /** Recent turn durations per pipeline (the overview). */
  turnLatency: TurnLatency;
  /** The controller's turn events, for the metrics, the trail and the latency rings. */
  turns: Required<Pick<ControllerObserver, 'turnStarted' | 'turnEnded' | 'turnRetried'>>;
}

export interface RecorderOptions {
  stores: Stores;
  pool: QueryPool;
  pipelines: ReadonlyMap<string, Pipeline>;
  outcomes: OutcomeBus;
  logger: Logger;
  /** Turns this replica runs now, read at scrape time. */
  running: () => number;
  /** The single-owner channels' roles here, read at scrape time. */
  channelRoles: () => Iterable<{ id: string; role: 'active' | 'standby' }>;
}

/**
 * Subscribes the audit log, the metrics and what the console reads besides the stores (in memory,
 * per replica, lost on restart) to every outcome.
 */
export function createRecorders(config: Config, options: RecorderOptions): Recorders {
  const { stores, outcomes } = options;
  const metrics = createMetrics(options.pool, {
    pipelines: options.pipelines,
    running: options.running,
    channelRoles: options.channelRoles,
    sharedPool: config.store.kind === 'redis',
    outbox: stores.outbox,
    handoffs: stores.handoffs,
    storeCounts: stores.writeCounts,
  });
  const audit = createAuditRecorder({
    auditLog: stores.auditLog,
    config: config.audit,
    logger: options.logger,
  });
  // Its write joins the commit that ends the message; the others hear of an outcome once committed.
  outcomes.subscribe(audit.record, { stores: true });
  outcomes.subscribe(metrics.recordOutcome);
  const trail = createMessageTrail({
    storeText: config.audit.storeText,
    recordIgnored: config.audit.recordIgnored,
  });
  const outcomeRate = createOutcomeRate();
  const turnLatency = createTurnLatency();
  outcomes.subscribe(trail.recordOutcome);
  outcomes.subscribe(outcomeRate.record);

  return {
    metrics,
    trail,
    outcomeRate,
    turnLatency,
    turns: {
      turnStarted(turn) {
        metrics.observer.turnStarted?.(turn);
        trail.observer.turnStarted(turn);
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
    },
  };
}
