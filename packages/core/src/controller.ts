import { type Query, aggregate } from './aggregator.js';
import { retryDelayMs } from './backoff.js';
import { SwitchboardError, isSwitchboardError } from './errors.js';
import type { Reply } from './message.js';
import type { OutcomeReason, OutcomeSink } from './outcome.js';
import type { PipelinePolicy } from './pipeline-policy.js';
import { type Logger, silentLogger } from './ports/logger.js';
import type { Pipeline, PipelineResult } from './ports/pipeline.js';
import type { QueryPool, QueuedMessage, Turn } from './ports/query-pool.js';

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

interface RunningTurn {
  turn: Turn;
  /** When the turn is aborted as timed out, and when it is force-released (ms). */
  deadlineAt: number;
  orphanAt: number;
  /** Created on the first read of the signal: most turns finish without anyone asking for it. */
  abort: AbortController | undefined;
  /** Why the turn was aborted, also when nobody had asked for the signal yet. */
  abortReason: unknown;
  /** Resolves the turn's settlement: the pipeline's answer, or `orphaned` from the sweep. */
  settle: (settlement: Settlement) => void;
  /** The whole turn, settlement included; the drain waits on it. */
  finished: Promise<void>;
  /** Set once the turn's fate is decided, so that a late settlement cannot decide it again. */
  decided: boolean;
}

const DEFAULT_ORPHAN_GRACE_MS = 100_000;
const DEFAULT_ABORT_GRACE_MS = 2000;
const CLAIM_ERROR_RETRY_MS = 1000;

type Settlement = { ok: true; replies: Reply[] } | { ok: false; error: unknown } | { orphaned: true };

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

  const running = new Map<string, RunningTurn>();
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

  async function pump(): Promise<void> {
    if (!started || stopped) return;
    if (pumping) {
      pumpAgain = true;
      return;
    }
    pumping = true;
    try {
      do {
        pumpAgain = false;
        for (let turn = await pool.claim(); turn !== null; turn = stopped ? null : await pool.claim()) {
          startTurn(turn);
        }
      } while (pumpAgain && !stopped);
    } catch (err) {
      logger.error({ err }, 'claim failed: the pool is unreachable, retrying');
      setTimeout(() => void pump(), CLAIM_ERROR_RETRY_MS).unref();
    } finally {
      pumping = false;
    }
    await checkIdle();
  }

  async function checkIdle(): Promise<void> {
    if (idleWaiters.length === 0 || running.size > 0) return;
    const stats = await pool.stats();
    if (stats.pending > 0 || stats.inflight > 0 || running.size > 0) return;
    const waiters = idleWaiters;
    idleWaiters = [];
    for (const resolve of waiters) resolve();
  }

  function signalOf(entry: RunningTurn): AbortSignal {
    if (entry.abort === undefined) {
      entry.abort = new AbortController();
      if (entry.abortReason !== undefined) entry.abort.abort(entry.abortReason);
    }
    return entry.abort.signal;
  }

  function abortTurn(entry: RunningTurn, reason: unknown): void {
    if (entry.abortReason !== undefined) return;
    entry.abortReason = reason;
    entry.abort?.abort(reason);
  }

  // One timer for every running turn's deadline, instead of two timers per turn: it is armed for
  // the earliest deadline and, when it fires, scans the running turns (at most the global limit).
  let sweepTimer: NodeJS.Timeout | undefined;
  let sweepAt = Number.POSITIVE_INFINITY;

  function armSweep(at: number): void {
    if (at >= sweepAt) return;
    if (sweepTimer !== undefined) clearTimeout(sweepTimer);
    sweepAt = at;
    sweepTimer = setTimeout(sweep, Math.max(0, at - now()));
    sweepTimer.unref();
  }

  function sweep(): void {
    sweepTimer = undefined;
    sweepAt = Number.POSITIVE_INFINITY;
    const at = now();
    let next = Number.POSITIVE_INFINITY;
    for (const entry of running.values()) {
      if (entry.decided) continue;
      if (at >= entry.orphanAt) {
        entry.settle({ orphaned: true });
        continue;
      }
      if (at >= entry.deadlineAt) {
        const policy = policies.get(entry.turn.pipeline);
        abortTurn(
          entry,
          new SwitchboardError('SB_PIPELINE_TIMEOUT', {
            retryable: true,
            message: `pipeline "${entry.turn.pipeline}" did not answer within ${policy?.timeoutMs} ms`,
          }),
        );
      }
      next = Math.min(next, entry.abortReason === undefined ? entry.deadlineAt : entry.orphanAt);
    }
    if (next !== Number.POSITIVE_INFINITY) armSweep(next);
  }

  function startTurn(turn: Turn): void {
    const startedAt = now();
    const timeoutMs = policies.get(turn.pipeline)?.timeoutMs ?? 0;
    const entry: RunningTurn = {
      turn,
      deadlineAt: startedAt + timeoutMs,
      orphanAt: startedAt + timeoutMs + orphanGraceMs,
      abort: undefined,
      abortReason: undefined,
      settle: () => {},
      finished: Promise.resolve(),
      decided: false,
    };
    running.set(turn.id, entry);
    entry.finished = finish(entry, startedAt);
  }

  async function finish(entry: RunningTurn, startedAt: number): Promise<void> {
    try {
      await runTurn(entry, startedAt);
    } catch (err) {
      logger.error({ err, turn: entry.turn.id }, 'turn settlement failed');
    } finally {
      running.delete(entry.turn.id);
      void pump();
    }
  }

  async function runTurn(entry: RunningTurn, startedAt: number): Promise<void> {
    const { turn } = entry;
    const pipeline = pipelines.get(turn.pipeline);
    const policy = policies.get(turn.pipeline);
    // Built only on the paths that log: a child logger per turn is measurable at high rates.
    const log = () => logger.child({ turn: turn.id, session: turn.session, pipeline: turn.pipeline });
    const end = (result: TurnResult) => observer?.turnEnded?.(turn, result, now() - startedAt);

    if (pipeline === undefined || policy === undefined) {
      entry.decided = true;
      log().error({ messages: turn.messages.length }, 'pipeline missing: dropping messages');
      await pool.complete(turn);
      const error = new SwitchboardError('SB_PIPELINE_MISSING', {
        message: `pipeline "${turn.pipeline}" is not configured`,
      });
      recordAll(turn.messages, 'dropped', { reason: 'pipeline_missing', turn, error });
      end('dropped');
      return;
    }

    const query = aggregate(turn);
    observer?.turnStarted?.(turn);
    armSweep(entry.deadlineAt);
    const settlement = await run(entry, pipeline, query, log);
    if (entry.decided) return;
    if (isSwitchboardError(entry.abortReason, 'SB_SHUTDOWN') && !('ok' in settlement && settlement.ok)) {
      await abandonForShutdown(entry);
      return;
    }
    entry.decided = true;

    if ('orphaned' in settlement) {
      log().error(
        { attempt: turn.attempt, timeoutMs: policy.timeoutMs, graceMs: orphanGraceMs },
        'orphaned turn: the pipeline ignored its abort signal; releasing its slot',
      );
      const timeout = new SwitchboardError('SB_PIPELINE_TIMEOUT', { retryable: true });
      await fail(turn, query, policy, timeout, log, end);
      return;
    }
    if (!settlement.ok) {
      await fail(turn, query, policy, settlement.error, log, end);
      return;
    }
    try {
      await deliver(query, settlement.replies);
    } catch (err) {
      log().error({ err }, 'dead letter: replies could not be delivered');
      await pool.complete(turn);
      recordAll(turn.messages, 'dead_lettered', { reason: 'delivery_failed', turn, error: err });
      end('dead_lettered');
      return;
    }
    await pool.complete(turn);
    recordAll(turn.messages, 'completed', { turn, replies: settlement.replies });
    end('completed');
  }

  /**
   * Runs the pipeline. Settles with its answer, or `orphaned` when the sweep finds it still
   * running past timeout + grace — whichever comes first.
   */
  function run(entry: RunningTurn, pipeline: Pipeline, query: Query, log: () => Logger): Promise<Settlement> {
    const settlement = new Promise<Settlement>((resolve) => {
      entry.settle = resolve;
    });
    const context = {
      get signal() {
        return signalOf(entry);
      },
      get logger() {
        return log();
      },
    };
    let answer: Promise<PipelineResult>;
    try {
      answer = pipeline.run(query, context);
    } catch (error) {
      answer = Promise.reject(error);
    }
    answer.then(
      (result) => entry.settle({ ok: true, replies: result.replies }),
      (error: unknown) => entry.settle({ ok: false, error: entry.abortReason ?? error }),
    );
    return settlement;
  }

  async function fail(
    turn: Turn,
    query: Query,
    policy: PipelinePolicy,
    error: unknown,
    log: () => Logger,
    end: (result: TurnResult) => void,
  ): Promise<void> {
    const retryable = isSwitchboardError(error) && error.retryable;
    if (retryable && turn.attempt < policy.retry.maxAttempts) {
      const delayMs = Math.max(retryDelayMs(turn.attempt, policy.retry, random), error.retryAfterMs ?? 0);
      log().warn({ err: error, attempt: turn.attempt, delayMs }, 'turn failed, retrying');
      await pool.retry(turn, now() + delayMs);
      observer?.turnRetried?.(turn, delayMs);
      end('retried');
      return;
    }
    const reason = retryable ? 'max_attempts' : 'fatal_error';
    log().error({ err: error, attempt: turn.attempt, reason }, 'dead letter: turn failed for good');
    await pool.complete(turn);
    recordAll(turn.messages, 'dead_lettered', { reason, turn, error });
    end('dead_lettered');
    if (policy.deadLetterReply !== undefined) {
      await deliver(query, [{ text: policy.deadLetterReply }]).catch((err) =>
        log().warn({ err }, 'dead letter reply could not be delivered'),
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
    void pump().then(checkIdle);
    const first = await within(idle, drainTimeoutMs);
    stopped = true;
    unsubscribe?.();
    if (first === 'timeout') {
      const aborted = [...running.values()];
      logger.warn({ running: aborted.length }, 'drain timeout: aborting running turns');
      for (const entry of aborted) abortTurn(entry, new SwitchboardError('SB_SHUTDOWN'));
      await within(Promise.allSettled(aborted.map((entry) => entry.finished)), abortGraceMs);
      // Turns that ignored the abort are let go; their late results are ignored.
      for (const entry of aborted) await abandonForShutdown(entry);
    }
    if (!pool.durable) {
      const left = await pool.takeAll();
      recordAll(left, 'dropped', { reason: 'shutdown' });
    }
    if (sweepTimer !== undefined) clearTimeout(sweepTimer);
    logger.info({}, 'controller stopped');
  }

  return {
    start() {
      if (started) return;
      started = true;
      unsubscribe = pool.onRunnable(() => void pump());
      void pump();
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
