import { z } from 'zod';
import { durationMs } from '../schema/duration.js';
import { numeric } from '../schema/numeric.js';

/**
 * Debounce of a pipeline (LangBot's aggregator): a run of messages from one sender
 * becomes runnable `delayMs` after its last message, `maxWaitMs` after its first, or at once
 * when `maxMessages` are buffered.
 */
export const AggregationSchema = z
  .strictObject({
    enabled: z.boolean().default(false),
    delay: durationMs({ min: '100ms', max: '10s' }).prefault('1.5s'),
    /** Defaults to 5 × delay. */
    max_wait: durationMs({ max: '5m' }).optional(),
    max_messages: numeric(z.number().int().min(1).max(100)).prefault(10),
  })
  .transform(({ enabled, delay, max_wait, max_messages }) => ({
    enabled,
    delayMs: delay,
    maxWaitMs: max_wait ?? 5 * delay,
    maxMessages: max_messages,
  }));

/**
 * Retry of failed turns (buzz): base × 2^(n−1), ±20% jitter, and no wait — a
 * Retry-After included — longer than `max_delay`. The bounds keep a retried message from being
 * parked for weeks by a typo.
 */
export const RetrySchema = z
  .strictObject({
    max_attempts: numeric(z.number().int().min(1).max(100)).prefault(10),
    base_delay: durationMs({ max: '1h' }).prefault('5s'),
    max_delay: durationMs({ max: '1h' }).prefault('300s'),
  })
  .transform(({ max_attempts, base_delay, max_delay }) => ({
    maxAttempts: max_attempts,
    baseDelayMs: base_delay,
    maxDelayMs: max_delay,
  }));

/**
 * The scheduling fields of `pipelines[]`, untransformed, so the config schema can extend them
 * with each pipeline type's own keys and stay strict.
 */
export const PipelinePolicyFields = z.object({
  id: z
    .string()
    .regex(/^[A-Za-z0-9_.-]+$/, 'use letters, digits, _ . -')
    .refine(
      (id) => !id.startsWith('__'),
      'ids starting with __ are routing targets (__discard__, __handoff__)',
    ),
  // At least 1 s: 0 (or a few ms) fails every turn at once, each failure a retryable timeout,
  // so messages would only cycle through their attempts into the dead letters.
  timeout: durationMs({ min: '1s', max: '1h' }).prefault('120s'),
  max_concurrency: numeric(z.number().int().min(1)).optional(),
  aggregation: AggregationSchema.prefault({}),
  busy_mode: z.enum(['queue', 'collect']).default('queue'),
  retry: RetrySchema.prefault({}),
  dead_letter_reply: z.string().min(1).optional(),
});

/** The policy the core engine reads, from parsed `PipelinePolicyFields`. */
export function toPipelinePolicy(fields: z.output<typeof PipelinePolicyFields>) {
  return {
    id: fields.id,
    timeoutMs: fields.timeout,
    maxConcurrency: fields.max_concurrency ?? Number.POSITIVE_INFINITY,
    aggregation: fields.aggregation,
    busyMode: fields.busy_mode,
    retry: fields.retry,
    deadLetterReply: fields.dead_letter_reply,
  };
}

/** How a pipeline is scheduled: the part of `pipelines[]` the core engine reads. */
export const PipelinePolicySchema = PipelinePolicyFields.transform(toPipelinePolicy);
export type PipelinePolicy = z.output<typeof PipelinePolicySchema>;
export type PipelinePolicyInput = z.input<typeof PipelinePolicySchema>;

/**
 * The part of a pipeline's policy a query pool applies: its slot limit, its readiness rules, and
 * the tenant whose pipeline it is (none: `default`), whose share its turns count against.
 */
export type PoolPipelinePolicy = Pick<
  PipelinePolicy,
  'id' | 'maxConcurrency' | 'aggregation' | 'busyMode'
> & {
  tenant?: string;
};

/** `concurrency:` — global turns in flight and turns per session. */
export const ConcurrencySchema = z
  .strictObject({
    pipeline: numeric(z.number().int().min(1)).prefault(20),
    session: numeric(z.number().int().min(1)).prefault(1),
  })
  .transform(({ pipeline, session }) => ({ global: pipeline, perSession: session }));
export type Concurrency = z.output<typeof ConcurrencySchema>;

/** `queue:` — bounds of the pool. */
export const QueueLimitsSchema = z
  .strictObject({
    max_pending: numeric(z.number().int().min(1)).prefault(10_000),
    max_pending_per_session: numeric(z.number().int().min(1)).prefault(500),
  })
  .transform(({ max_pending, max_pending_per_session }) => ({
    maxPending: max_pending,
    maxPendingPerSession: max_pending_per_session,
  }));
export type QueueLimits = z.output<typeof QueueLimitsSchema>;
