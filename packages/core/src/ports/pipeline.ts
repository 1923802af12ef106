import type { Query } from '../scheduling/aggregator.js';
import type { Reply } from '../model/message.js';
import type { Logger } from './logger.js';

export interface PipelineRunContext {
  /** Aborted at the pipeline's timeout and on shutdown; honour it to release the slot early. */
  signal: AbortSignal;
  logger: Logger;
  /**
   * The W3C trace context of this call (`traceparent`) for a backend that joins the message's
   * trace; undefined when tracing is off. Send it as request headers.
   */
  traceHeaders?: Readonly<Record<string, string>>;
  /**
   * Present when the turn's channel renders answers progressively (docs/design.md §4
   * "Streaming"): a streaming pipeline calls it with each piece of text as it arrives, in order,
   * and still returns the whole answer as `replies` at the end. It returns at once and never
   * throws (rendering runs beside the pipeline). A stream that breaks is an error of the run,
   * thrown like any other; what was previewed is then left as it is.
   */
  stream?: (delta: string) => void;
}

export interface PipelineResult {
  replies: Reply[];
  /**
   * A store write the run issued as it returned and did not wait for (the `openai` pipeline's
   * history): the session's next turn starts only once it landed. In the SQLite file that holds
   * the outbox it joins the commit storing the replies instead of taking one of its own. A
   * rejection is logged and ends nothing: the answer stands.
   */
  saved?: Promise<void>;
  /**
   * The bot hands the conversation to an operator (docs/design.md §2 "Handoff"): its replies are
   * sent, then the session's next messages wait for an operator instead of running turns.
   */
  handoff?: { reason: string };
}

/**
 * What a pipeline that keeps state between turns (worker processes, bound sessions) reports for
 * `/readyz`, `/admin/queues` and the metrics. Stateless pipelines report nothing.
 */
export interface PipelineStatus {
  /** Lifecycle state, e.g. `listening`, `waking`, `ready`, `failed` for a pool of workers. */
  state: string;
  /** False while it cannot run turns (its workers fail to start): `/readyz` answers 503. */
  ok: boolean;
  /** A short explanation for operators, e.g. the last start failure and the next restart. */
  detail?: string;
  /** Sessions holding state in the pipeline now (`switchboard_pipeline_sessions`). */
  sessions: number;
  /** Further figures for `/admin/queues`, e.g. each worker's state and pid. */
  details?: Record<string, unknown>;
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
 *
 * A pipeline that owns resources beyond a run (child processes) implements `status` and `stop`;
 * the gateway calls `stop` once, after the controller's drain.
 */
export interface Pipeline {
  readonly id: string;
  run(query: Query, context: PipelineRunContext): Promise<PipelineResult>;
  /** Its state now; absent for stateless pipelines. */
  status?(): PipelineStatus;
  /** Releases what it owns within `timeoutMs`, forcibly past it; resolves when nothing is left. */
  stop?(options: { timeoutMs: number }): Promise<void>;
}
