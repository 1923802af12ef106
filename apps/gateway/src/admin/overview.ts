import type { Concurrency, OutcomeKind, PoolStats, QueueLimits } from '@switchboard/core';
import type { MinuteCounts, OutcomeRate } from './outcome-rate.js';
import type { TurnLatency } from './turn-latency.js';

/** The health of one channel, as `/readyz` reports it. */
export interface ChannelHealth {
  id: string;
  ready: boolean;
  /** Single-owner channels: whether this replica holds the connection. */
  state?: string;
  detail?: string;
}

/** `GET /admin/overview`: what the console's overview page shows, in one answer. */
export interface Overview {
  at: number;
  /** The last 60 minutes on this replica, oldest first. */
  messages_per_minute: MinuteCounts[];
  /** Totals of the same hour by outcome. */
  last_hour: Record<OutcomeKind, number>;
  /**
   * The pool's counts (cluster-wide with a shared pool) against the configured limits. For one
   * tenant: the sums over its pipelines, and `active_sessions` null (the pool counts sessions
   * for the whole gateway only).
   */
  load: {
    inflight_turns: number;
    active_sessions: number | null;
    pending: number;
    limits: { concurrency_pipeline: number; concurrency_session: number; max_pending: number };
  };
  /**
   * Per pipeline: turns running, messages waiting and how long the oldest has waited (ms, 0 when
   * none waits; cluster-wide with a shared pool), and p50/p95 of its recent completed turns on
   * this replica.
   */
  pipelines: Record<
    string,
    {
      inflight: number;
      pending: number;
      oldest_wait_ms: number;
      p50_ms: number | null;
      p95_ms: number | null;
    }
  >;
  channels: ChannelHealth[];
}

/** Assembles the overview from the outcome ring, the pool, the latency rings and channel health. */
export function overview(parts: {
  nowMs: number;
  rate: OutcomeRate;
  stats: PoolStats;
  latency: TurnLatency;
  pipelineIds: readonly string[];
  limits: { concurrency: Concurrency; queue: QueueLimits };
  channels: ChannelHealth[];
  /** One tenant's overview: its outcomes, and the load of `pipelineIds` (its own) alone. */
  tenant?: string;
}): Overview {
  const minutes = parts.rate.lastHour(parts.nowMs, parts.tenant);
  const lastHour = {} as Record<OutcomeKind, number>;
  for (const minute of minutes) {
    for (const [kind, count] of Object.entries(minute.counts) as Array<[OutcomeKind, number]>) {
      lastHour[kind] = (lastHour[kind] ?? 0) + count;
    }
  }
  const latencies = parts.latency.percentiles();
  const pipelines: Overview['pipelines'] = {};
  for (const id of parts.pipelineIds) {
    pipelines[id] = {
      inflight: parts.stats.inflightByPipeline[id] ?? 0,
      pending: parts.stats.pendingByPipeline[id] ?? 0,
      oldest_wait_ms: parts.stats.oldestWaitMsByPipeline[id] ?? 0,
      p50_ms: latencies[id]?.p50_ms ?? null,
      p95_ms: latencies[id]?.p95_ms ?? null,
    };
  }
  const sum = (field: 'inflight' | 'pending') =>
    Object.values(pipelines).reduce((total, pipeline) => total + pipeline[field], 0);
  const whole = parts.tenant === undefined;
  return {
    at: parts.nowMs,
    messages_per_minute: minutes,
    last_hour: lastHour,
    load: {
      inflight_turns: whole ? parts.stats.inflight : sum('inflight'),
      active_sessions: whole ? parts.stats.sessions : null,
      pending: whole ? parts.stats.pending : sum('pending'),
      limits: {
        concurrency_pipeline: parts.limits.concurrency.global,
        concurrency_session: parts.limits.concurrency.perSession,
        max_pending: parts.limits.queue.maxPending,
      },
    },
    pipelines,
    channels: parts.channels,
  };
}
