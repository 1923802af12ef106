import {
  type Pipeline,
  type PipelinePolicy,
  PipelinePolicySchema,
  type QueryPool,
  type QueuedMessage,
  createController,
  createMemoryQueryPool,
  createOutcomeBus,
} from '@switchboard/core';
import { instantDelivery } from '@switchboard/contracts';
import type { BenchMessage, SchedulerFactory } from './scheduler.js';

/** No cap may refuse or drop a benchmark message: the backlogs are the point. */
const UNBOUNDED = Number.MAX_SAFE_INTEGER;

/** The one pipeline policy of the benchmarks: the schema's defaults. */
export const BENCH_POLICY: PipelinePolicy = PipelinePolicySchema.parse({ id: 'bench' });

/** The limits and pipeline every benchmark pool gets, whichever its store: no caps, one pipeline. */
export function benchPoolSettings(limits: { globalLimit: number; sessionLimit: number }) {
  return {
    concurrency: { global: limits.globalLimit, perSession: limits.sessionLimit },
    limits: { maxPending: UNBOUNDED, maxPendingPerSession: UNBOUNDED },
    pipelines: [BENCH_POLICY],
  };
}

/** Switchboard's in-memory pool, without a journal and without caps, for one pipeline. */
export function createBenchPool(limits: { globalLimit: number; sessionLimit: number }): QueryPool {
  return createMemoryQueryPool(benchPoolSettings(limits));
}

/** What the ingress would enqueue for `message`. */
export function queuedMessageOf(message: BenchMessage): QueuedMessage {
  return {
    message: message.inbound,
    session: message.session,
    pipeline: BENCH_POLICY.id,
    routedByRule: false,
    attempt: 0,
    acceptedAt: Date.now(),
  };
}

/**
 * Switchboard's in-memory pool and controller wired as the gateway wires them (see
 * packages/core/test/harness.ts), with the no-op pipeline, no journal and an outcome bus whose
 * `completed` outcomes mark the end of each message.
 */
export const createSwitchboardScheduler: SchedulerFactory = (options) => {
  const policy = BENCH_POLICY;
  const pool = createBenchPool(options);
  const outcomes = createOutcomeBus();
  outcomes.subscribe((outcome) => {
    if (outcome.kind === 'completed') options.onDone(outcome.message.id);
  });
  const pipeline: Pipeline = {
    id: policy.id,
    async run(query) {
      return { replies: [{ text: await options.pipeline(query.message.id, query.text) }] };
    },
  };
  // Replies leave through the outbox, as in the gateway; a message completes once they are sent.
  const sending = instantDelivery(outcomes);
  const controller = createController({
    pool,
    pipelines: new Map([[policy.id, pipeline]]),
    policies: new Map([[policy.id, policy]]),
    outcomes,
    outbox: sending.outbox,
  });

  return {
    async enqueue(message) {
      const result = await pool.enqueue(queuedMessageOf(message));
      if (!result.accepted) throw new Error(`switchboard refused ${message.id}: ${result.reason}`);
    },
    start: () => controller.start(),
    stop: async () => {
      await controller.stop({ drainTimeoutMs: 1000 });
      await sending.stop();
    },
  };
};
