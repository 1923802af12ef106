import type { Span } from '@opentelemetry/api';
import { type Logger, lazyChild } from '../ports/logger.js';
import type { PipelineRunContext } from '../ports/pipeline.js';
import type { ClaimedTurn, Turn } from '../ports/query-pool.js';
import type { SetNode } from '../structures/indexed-set.js';
import type { PipelinePolicy } from './pipeline-policy.js';

/**
 * A turn the controller runs, and the context its pipeline gets. The abort signal and the logger
 * bound to the turn are built on first read: most turns finish without anyone asking for them.
 */
export class RunningTurn implements PipelineRunContext, SetNode {
  setIndex = -1;
  /** When the turn is aborted as timed out, and when it is force-released (ms). */
  readonly deadlineAt: number;
  readonly orphanAt: number;
  /** Set once the turn's fate is decided, so that a late answer cannot decide it again. */
  decided = false;
  /** Set when the pool no longer holds the turn for this process (`QueryPool.onLeaseLost`). */
  leaseLost = false;
  /**
   * The turn the pool claimed for this controller with this turn's settlement
   * (`SettleOptions.claimNext`): started once this one has ended.
   */
  next: ClaimedTurn | undefined = undefined;
  /** The whole turn; the drain waits on it. */
  finished: Promise<void> | undefined = undefined;
  /** The turn's span and its ids for log lines, set before anything runs when tracing is on. */
  trace: { span: Span; logFields: object } | undefined = undefined;
  /** The pipeline call's W3C trace context headers, while it runs traced. */
  traceHeaders: Readonly<Record<string, string>> | undefined = undefined;
  /** The rendering of the answer while it streams, when the turn's channel shows previews. */
  stream: ((delta: string) => void) | undefined = undefined;
  readonly #parentLogger: Logger;
  #logger: Logger | undefined = undefined;
  #abort: AbortController | undefined = undefined;
  #abortReason: unknown = undefined;

  /**
   * @param policy The pipeline's policy when the turn started (none: the pipeline is not
   *   configured): the turn keeps it, also if a reload changes or removes the pipeline meanwhile.
   */
  constructor(
    readonly turn: Turn,
    readonly startedAt: number,
    readonly policy: PipelinePolicy | undefined,
    orphanGraceMs: number,
    parentLogger: Logger,
  ) {
    const timeoutMs = policy?.timeoutMs ?? 0;
    this.deadlineAt = startedAt + timeoutMs;
    this.orphanAt = startedAt + timeoutMs + orphanGraceMs;
    this.#parentLogger = parentLogger;
  }

  get signal(): AbortSignal {
    if (this.#abort === undefined) {
      this.#abort = new AbortController();
      if (this.#abortReason !== undefined) this.#abort.abort(this.#abortReason);
    }
    return this.#abort.signal;
  }

  get logger(): Logger {
    this.#logger ??= lazyChild(this.#parentLogger, () => {
      const { id, session, pipeline } = this.turn;
      return { turn: id, session, pipeline, ...this.trace?.logFields };
    });
    return this.#logger;
  }

  /** Why the turn was aborted, also when nobody had asked for the signal yet. */
  get abortReason(): unknown {
    return this.#abortReason;
  }

  /** Aborts the run with `reason` (a timeout, the shutdown); only the first reason counts. */
  abort(reason: unknown): void {
    if (this.#abortReason !== undefined) return;
    this.#abortReason = reason;
    this.#abort?.abort(reason);
  }
}
