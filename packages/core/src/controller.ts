import { type Query, aggregate } from './aggregator.js';
import { retryDelayMs } from './backoff.js';
import { SwitchboardError, isSwitchboardError } from './errors.js';
import type { Reply } from './message.js';
import type { OutcomeReason, OutcomeSink } from './outcome.js';
import type { PipelinePolicy } from './pipeline-policy.js';
import { type Logger, silentLogger } from './ports/logger.js';
import type { Pipeline, PipelineRunContext } from './ports/pipeline.js';
import type { QueryPool, QueuedMessage, Turn } from './ports/query-pool.js';
import { IndexedSet, type SetNode } from './structures/indexed-set.js';
import { WakeTimer } from './structures/wake-timer.js';

/** How a turn ended, for metrics. */
export type TurnResult = 'completed' | 'retried' | 'dead_lettered' | 'dropped' | 'abandoned';

/** Hooks for metrics and status tracking; every method is optional and must not throw. */
export interface ControllerObserver {
  turnStarted?(turn: Turn): void;
  turnEnded?(turn: Turn, result: TurnResult, durationMs: number): void;
  /** A turn will run again after `delayMs`. */
  turnRetried?(turn: Turn, delayMs: number): void;
}

export interface ControllerOptions {
  pool: QueryPool;
  pipelines: ReadonlyMap<string, Pipeline>;
  policies: ReadonlyMap<string, PipelinePolicy>;
  outcomes: OutcomeSink;
  /** Sends replies through the channel the query came from (the outbox). */
  deliver: (query: Query, replies: readonly Reply[]) => Promise<void>;
  logger?: Logger;
  observer?: ControllerObserver;
  /** How long after its timeout an unsettled turn is force-released. Default: 100 s (seed 002). */
  orphanGraceMs?: number;
  /** How long aborted turns get to settle at the end of a drain. Default: 2 s. */
  abortGraceMs?: number;
  /** Jitter source, [0, 1). */
  random?: () => number;
  now?: () => number;
}

export interface Controller {
  /** Starts dispatching whatever the pool makes runnable. */
  start(): void;
  /**
   * Drains (DESIGN §2 "Shutdown"): refuses new messages, flushes debounce buffers, lets queued
   * and running work finish within `drainTimeoutMs`, then aborts what still runs. A durable pool
   * keeps what is left for the next start; otherwise it ends as `dropped/shutdown`.
   */
  stop(options: { drainTimeoutMs: number }): Promise<void>;
  /** Turns running now. */
  readonly running: number;
}

/**
 * A turn the controller runs, and the context its pipeline gets. The abort signal and the logger
 * bound to the turn are built on first read: most turns finish without anyone asking for them.
 */
class RunningTurn implements PipelineRunContext, SetNode {
  setIndex = -1;
  /** When the turn is aborted as timed out, and when it is force-released (ms). */
  readonly deadlineAt: number;
  readonly orphanAt: number;
  /** Set once the turn's fate is decided, so that a late answer cannot decide it again. */
  decided = false;
  /** The whole turn; the drain waits on it. */
  finished: Promise<void> | undefined = undefined;
  readonly #parentLogger: Logger;
  #logger: Logger | undefined = undefined;
  #abort: AbortController | undefined = undefined;
  #abortReason: unknown = undefined;

  constructor(
    readonly turn: Turn,
    readonly startedAt: number,
    timeoutMs: number,
    orphanGraceMs: number,
    parentLogger: Logger,
  ) {
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
    const { id, session, pipeline } = this.turn;
    this.#logger ??= this.#parentLogger.child({ turn: id, session, pipeline });
    return this.#logger;
  }

  /** Why the turn was aborted, also when nobody had asked for the signal yet. */
  get abortReason(): unknown {
    return this.#abortReason;
  }

  abort(reason: unknown): void {
    if (this.#abortReason !== undefined) return;
    this.#abortReason = reason;
    this.#abort?.abort(reason);
  }
}

const DEFAULT_ORPHAN_GRACE_MS = 100_000;
const DEFAULT_ABORT_GRACE_MS = 2000;
const CLAIM_ERROR_RETRY_MS = 1000;

function describeError(error: unknown): { code: string; message: string } {
  if (isSwitchboardError(error)) return { code: error.code, message: error.message };
  if (error instanceof Error) return { code: 'SB_PIPELINE_FAILED', message: error.message };
  return { code: 'SB_PIPELINE_FAILED', message: String(error) };
}

/**
 * The controller (DESIGN §2, seeds 000 and 001): claims runnable turns from the pool — which
 * takes the session slot, then the pipeline slot, then the global slot — runs each with an
 * AbortSignal at the pipeline's timeout, and settles it: completed, retried with backoff
 * (keeping its place), or dead-lettered. It keeps no per-session state: a finished turn leaves
 * nothing behind.
 */
export function createController(options: ControllerOptions): Controller {
  const { pool, pipelines, policies, outcomes, deliver, observer } = options;
  const logger = (options.logger ?? silentLogger).child({ component: 'controller' });
  const orphanGraceMs = options.orphanGraceMs ?? DEFAULT_ORPHAN_GRACE_MS;
  const abortGraceMs = options.abortGraceMs ?? DEFAULT_ABORT_GRACE_MS;
  const random = options.random ?? Math.random;
  const now = options.now ?? Date.now;

  const running = new IndexedSet<RunningTurn>();
  let started = false;
  let stopped = false;
  let pumping = false;
  let pumpAgain = false;
  let idleWaiters: Array<() => void> = [];
  let stopping: Promise<void> | undefined;
  let unsubscribe: (() => void) | undefined;

  function recordAll(
    messages: readonly QueuedMessage[],
    kind: 'completed' | 'dropped' | 'dead_lettered',
    extra: { reason?: OutcomeReason; turn?: Turn; replies?: Reply[]; error?: unknown },
  ): void {
    const at = now();
    const error = extra.error === undefined ? undefined : describeError(extra.error);
    for (const queued of messages) {
      outcomes.record({
        kind,
        reason: extra.reason,
        at,
        message: queued.message,
        session: queued.session,
        pipeline: queued.pipeline,
        rule: queued.rule,
        turnId: extra.turn?.id,
        attempt: queued.attempt,
        replies: extra.replies,
        error,
      });
    }
  }

  /** Starts turns until the pool has nothing runnable; one claim loop at a time. */
  function pump(): void {
    if (!started || stopped) return;
    if (pumping) {
      pumpAgain = true;
      return;
    }
    pumping = true;
    void claimRunnable();
  }

  async function claimRunnable(): Promise<void> {
    try {
      do {
        pumpAgain = false;
        for (let turn = await pool.claim(); turn !== null; turn = stopped ? null : await pool.claim()) {
          startTurn(turn);
        }
      } while (pumpAgain && !stopped);
    } catch (err) {
      logger.error({ err }, 'claim failed: the pool is unreachable, retrying');
      setTimeout(pump, CLAIM_ERROR_RETRY_MS).unref();
    } finally {
      pumping = false;
    }
    checkIdle();
  }

  /** Wakes the drain once nothing is queued, claimed or running. */
  function checkIdle(): void {
    if (idleWaiters.length === 0 || running.size > 0) return;
    void pool.stats().then((stats) => {
      if (stats.pending > 0 || stats.inflight > 0 || running.size > 0) return;
      const waiters = idleWaiters;
      idleWaiters = [];
      for (const resolve of waiters) resolve();
    });
  }

  // One timer for every running turn's deadline, instead of two timers per turn: it is armed for
  // the earliest deadline and, when it fires, scans the running turns (at most the global limit).
  const sweepTimer = new WakeTimer(sweep, now);

  function sweep(): void {
    const at = now();
    let next = Number.POSITIVE_INFINITY;
    for (const entry of running.values()) {
      if (entry.decided) continue;
      const policy = policies.get(entry.turn.pipeline) as PipelinePolicy;
      if (at >= entry.orphanAt) {
        void releaseOrphan(entry, policy);
        continue;
      }
      if (at >= entry.deadlineAt) {
        entry.abort(
          new SwitchboardError('SB_PIPELINE_TIMEOUT', {
            retryable: true,
            message: `pipeline "${entry.turn.pipeline}" did not answer within ${policy.timeoutMs} ms`,
          }),
        );
      }
      next = Math.min(next, entry.abortReason === undefined ? entry.deadlineAt : entry.orphanAt);
    }
    sweepTimer.arm(next);
  }

  function startTurn(turn: Turn): void {
    const pipeline = pipelines.get(turn.pipeline);
    const policy = policies.get(turn.pipeline);
    const entry = new RunningTurn(turn, now(), policy?.timeoutMs ?? 0, orphanGraceMs, logger);
    running.add(entry);
    entry.finished = runTurn(entry, pipeline, policy);
  }

  /**
   * The turn no longer runs. Its slot was freed by the pool, which then wakes the claim loop
   * itself (`onRunnable`): pumping here too started a second claim loop per turn that mostly
   * found nothing. What is left to check is whether a drain may end.
   */
  function endTurn(entry: RunningTurn): void {
    running.delete(entry);
    checkIdle();
  }

  function ended(entry: RunningTurn, result: TurnResult): void {
    observer?.turnEnded?.(entry.turn, result, now() - entry.startedAt);
  }

  /**
   * Runs the pipeline and settles the turn: completed, retried or dead-lettered. The whole turn
   * is this one async function — it runs once per message at full load.
   */
  async function runTurn(
    entry: RunningTurn,
    pipeline: Pipeline | undefined,
    policy: PipelinePolicy | undefined,
  ): Promise<void> {
    const { turn } = entry;
    try {
      if (pipeline === undefined || policy === undefined) {
        entry.decided = true;
        entry.logger.error({ messages: turn.messages.length }, 'pipeline missing: dropping messages');
        await pool.complete(turn);
        const error = new SwitchboardError('SB_PIPELINE_MISSING', {
          message: `pipeline "${turn.pipeline}" is not configured`,
        });
        recordAll(turn.messages, 'dropped', { reason: 'pipeline_missing', turn, error });
        ended(entry, 'dropped');
        return;
      }

      const query = aggregate(turn);
      observer?.turnStarted?.(turn);
      sweepTimer.arm(entry.deadlineAt);
      let replies: Reply[];
      try {
        ({ replies } = await pipeline.run(query, entry));
      } catch (error) {
        // A turn the sweep released as orphaned, or the drain abandoned, is decided already.
        if (!entry.decided) await fail(entry, query, policy, entry.abortReason ?? error);
        return;
      }
      if (entry.decided) return;
      entry.decided = true;
      try {
        await deliver(query, replies);
      } catch (err) {
        entry.logger.error({ err }, 'dead letter: replies could not be delivered');
        await pool.complete(turn);
        recordAll(turn.messages, 'dead_lettered', { reason: 'delivery_failed', turn, error: err });
        ended(entry, 'dead_lettered');
        return;
      }
      await pool.complete(turn);
      recordAll(turn.messages, 'completed', { turn, replies });
      ended(entry, 'completed');
    } catch (err) {
      logger.error({ err, turn: turn.id }, 'turn settlement failed');
    } finally {
      endTurn(entry);
    }
  }

  /**
   * The sweep found the turn still running past timeout + grace: the pipeline ignored its abort
   * signal. Its slot is released as a timeout; its late answer, if any, is ignored.
   */
  async function releaseOrphan(entry: RunningTurn, policy: PipelinePolicy): Promise<void> {
    try {
      entry.logger.error(
        { attempt: entry.turn.attempt, timeoutMs: policy.timeoutMs, graceMs: orphanGraceMs },
        'orphaned turn: the pipeline ignored its abort signal; releasing its slot',
      );
      const timeout = new SwitchboardError('SB_PIPELINE_TIMEOUT', { retryable: true });
      await fail(entry, aggregate(entry.turn), policy, timeout);
    } catch (err) {
      logger.error({ err, turn: entry.turn.id }, 'turn settlement failed');
    } finally {
      endTurn(entry);
    }
  }

  /** The turn failed: abandoned when the drain aborted it, else retried with backoff or dead-lettered. */
  async function fail(
    entry: RunningTurn,
    query: Query,
    policy: PipelinePolicy,
    error: unknown,
  ): Promise<void> {
    if (isSwitchboardError(entry.abortReason, 'SB_SHUTDOWN')) {
      await abandonForShutdown(entry);
      return;
    }
    entry.decided = true;
    const { turn } = entry;
    const retryable = isSwitchboardError(error) && error.retryable;
    if (retryable && turn.attempt < policy.retry.maxAttempts) {
      const delayMs = retryDelayMs(turn.attempt, policy.retry, random, error.retryAfterMs);
      entry.logger.warn({ err: error, attempt: turn.attempt, delayMs }, 'turn failed, retrying');
      await pool.retry(turn, now() + delayMs);
      observer?.turnRetried?.(turn, delayMs);
      ended(entry, 'retried');
      return;
    }
    const reason = retryable ? 'max_attempts' : 'fatal_error';
    entry.logger.error({ err: error, attempt: turn.attempt, reason }, 'dead letter: turn failed for good');
    await pool.complete(turn);
    recordAll(turn.messages, 'dead_lettered', { reason, turn, error });
    ended(entry, 'dead_lettered');
    if (policy.deadLetterReply !== undefined) {
      await deliver(query, [{ text: policy.deadLetterReply }]).catch((err) =>
        entry.logger.warn({ err }, 'dead letter reply could not be delivered'),
      );
    }
  }

  /** Ends a turn that the drain aborted or that never settled: kept for the next start, or dropped. */
  async function abandonForShutdown(entry: RunningTurn): Promise<void> {
    if (entry.decided) return;
    entry.decided = true;
    if (pool.durable) {
      await pool.abandon(entry.turn);
    } else {
      await pool.complete(entry.turn);
      recordAll(entry.turn.messages, 'dropped', { reason: 'shutdown', turn: entry.turn });
    }
    observer?.turnEnded?.(entry.turn, 'abandoned', 0);
  }

  /** `promise`'s value, or 'timeout' after `ms`; the timer never outlives the race. */
  async function within<T>(promise: Promise<T>, ms: number): Promise<T | 'timeout'> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), ms);
    });
    try {
      return await Promise.race([promise, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  async function drain(drainTimeoutMs: number): Promise<void> {
    pool.close();
    pool.flushDebounce();
    const idle = new Promise<'idle'>((resolve) => idleWaiters.push(() => resolve('idle')));
    pump();
    checkIdle();
    const first = await within(idle, drainTimeoutMs);
    stopped = true;
    unsubscribe?.();
    if (first === 'timeout') {
      const aborted = running.values();
      logger.warn({ running: aborted.length }, 'drain timeout: aborting running turns');
      for (const entry of aborted) entry.abort(new SwitchboardError('SB_SHUTDOWN'));
      await within(Promise.allSettled(aborted.map((entry) => entry.finished)), abortGraceMs);
      // Turns that ignored the abort are let go; their late results are ignored.
      for (const entry of aborted) await abandonForShutdown(entry);
    }
    if (!pool.durable) {
      const left = await pool.takeAll();
      recordAll(left, 'dropped', { reason: 'shutdown' });
    }
    sweepTimer.cancel();
    logger.info({}, 'controller stopped');
  }

  return {
    start() {
      if (started) return;
      started = true;
      unsubscribe = pool.onRunnable(pump);
      pump();
    },
    stop({ drainTimeoutMs }) {
      stopping ??= drain(drainTimeoutMs);
      return stopping;
    },
    get running() {
      return running.size;
    },
  };
}
