import type { Query } from '../aggregator.js';
import type { Reply } from '../message.js';
import type { Logger } from './logger.js';

export interface PipelineRunContext {
  /** Aborted at the pipeline's timeout and on shutdown; honour it to release the slot early. */
  signal: AbortSignal;
  logger: Logger;
}

export interface PipelineResult {
  replies: Reply[];
}

/**
 * A bot backend: `text in → replies out`. Delivery is at least once: a turn that is retried, or
 * interrupted by a crash, runs again with a higher `query.attempt` and the same `query.id` — the
 * id is made from the turn's message ids (`turnIdOf`) — so pipelines with side effects
 * deduplicate on it. A re-run that merged a further message is another request, with another id,
 * and so is an operator's replay of a dead letter.
 *
 * Errors: throw a SwitchboardError with `retryable: true` (network, timeout, 408/429/5xx) to get
 * the controller's backoff, anything else dead-letters the turn. Left out: concurrency and
 * ordering, which the controller guarantees.
 */
export interface Pipeline {
  readonly id: string;
  run(query: Query, context: PipelineRunContext): Promise<PipelineResult>;
}
