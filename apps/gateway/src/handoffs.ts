import type { Config } from '@switchboard/config';
import {
  HANDOFF,
  type HandoffDesk,
  type HandoffObserver,
  type Logger,
  type OutcomeSink,
  type QueryPool,
  createHandoffDesk,
} from '@switchboard/core';
import type { LiveRouting } from './live-routing.js';
import type { Stores } from './stores.js';

/** The handoff desk and the sweep that ends idle handoffs. */
export interface Handoffs {
  desk: HandoffDesk;
  /** Starts the idle sweep. */
  start(): void;
  /** Stops it; a pass under way finishes. */
  stop(): Promise<void>;
}

/** How often the sweep looks for idle handoffs: a fraction of the timeout, between 1 s and 30 s. */
function sweepEveryMs(idleTimeoutMs: number): number {
  return Math.min(30_000, Math.max(1000, Math.floor(idleTimeoutMs / 4)));
}

/**
 * The desk over the store's handoffs (docs/design.md §2 "Handoff"), with the settings, pipelines
 * and routing in force. Every replica sweeps: ending a handoff is atomic, so of two replicas
 * ending the same one, one does.
 */
export function createHandoffs(deps: {
  stores: Stores;
  pool: QueryPool;
  outcomes: OutcomeSink;
  /** The configuration in force: its `handoff` settings and pipelines. */
  current: () => Config;
  routing: LiveRouting;
  observer: HandoffObserver;
  now: () => number;
  logger: Logger;
}): Handoffs {
  const { current, logger } = deps;
  const desk = createHandoffDesk({
    store: deps.stores.handoffs,
    pool: deps.pool,
    outbox: deps.stores.outbox,
    outcomes: deps.outcomes,
    settings: () => current().handoff,
    hasPipeline: (id) => current().pipelines.some((pipeline) => pipeline.id === id),
    reroute: (message) => {
      const configured = (id: string) => current().pipelines.some((pipeline) => pipeline.id === id);
      const decision = deps.routing.router().route(message);
      if (configured(decision.pipeline))
        return { pipeline: decision.pipeline, ...(decision.rule === null ? {} : { rule: decision.rule }) };
      // The merged text still holds what sent it to an operator ("human please"): routed again it
      // would go back there. The default pipeline answers it instead, if there is one.
      const fallback = current().routing.default;
      return decision.pipeline === HANDOFF && configured(fallback) ? { pipeline: fallback } : null;
    },
    observer: deps.observer,
    logger,
    now: deps.now,
  });

  let timer: NodeJS.Timeout | undefined;
  let sweeping: Promise<void> = Promise.resolve();
  let stopped = false;
  const schedule = () => {
    if (stopped) return;
    timer = setTimeout(sweep, sweepEveryMs(current().handoff.idleTimeoutMs));
    timer.unref();
  };
  function sweep(): void {
    sweeping = desk
      .endIdle()
      .then(
        (ended) => {
          if (ended > 0) logger.info({ ended }, 'idle handoffs ended');
        },
        (err: unknown) => logger.warn({ err }, 'idle handoff sweep failed; trying again later'),
      )
      .finally(schedule);
  }

  return {
    desk,
    start: schedule,
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await sweeping;
    },
  };
}
