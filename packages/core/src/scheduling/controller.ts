import { type Query, aggregate } from './aggregator.js';
import type { ControllerObserver } from './controller-observer.js';
import { crashPoint } from '../observability/crash-point.js';
import { SwitchboardError } from '../model/errors.js';
import type { MessageTracer } from '../observability/message-trace.js';
import type { OutcomeSink } from '../model/outcome.js';
import type { PipelinePolicy } from './pipeline-policy.js';
import type { HandoffDesk } from '../handoff/handoff-desk.js';
import { HANDOFF_POLICY } from '../handoff/handoff-policy.js';
import { HANDOFF } from '../inbound/router.js';
import { type Logger, silentLogger } from '../ports/logger.js';
import type { Pipeline, PipelineResult } from '../ports/pipeline.js';
import type { ClaimedTurn, QueryPool, Turn } from '../ports/query-pool.js';
import type { ReplySender } from '../outbound/reply-sender.js';
import type { ReplyStream } from '../outbound/reply-stream.js';
import type { TypingIndicator } from '../outbound/typing-indicator.js';
import type { Delivery, ReplyOutbox } from '../ports/reply-outbox.js';
import { RunningTurn } from './running-turn.js';
import { IndexedSet } from '../structures/indexed-set.js';
import { WakeTimer } from '../structures/wake-timer.js';
import { within } from '../structures/within.js';
import { createTurnSettlement } from './turn-settlement.js';

export interface ControllerOptions {
  pool: QueryPool;
  pipelines: ReadonlyMap<string, Pipeline>;
  policies: ReadonlyMap<string, PipelinePolicy>;
  outcomes: OutcomeSink;
  /** Where answered turns leave their replies; the reply sender sends them (reply-sender.ts). */
  outbox: ReplyOutbox;
  /**
   * The reply sender's `addThrough`: with a pool that stores replies in its settlement
   * (`QueryPool.storesReplies`), an answer is added through the write that completes its turn
   * instead of through `outbox` before it.
   */
  addThrough?: ReplySender['addThrough'];
  /**
   * Opens the progressive rendering of a turn's answer (docs/design.md §4 "Streaming") when the
   * channel of `query` shows previews; undefined otherwise. The pipeline then gets `stream`.
   */
  streamReplies?: (query: Query, logger: Logger) => ReplyStream | undefined;
  /**
   * Starts showing the bot typing in the chat of `query` (docs/design.md §3 "Typing") when its
   * channel has a typing signal and it is on; undefined otherwise. Stopped once the pipeline
   * answered or failed, before the answer is stored, so that no signal follows the reply.
   */
  typing?: (query: Query, logger: Logger) => TypingIndicator | undefined;
  /**
   * The query as the pipeline gets it, from the query as stored: what must be fresh on every
   * attempt and never stored (media URLs, docs/design.md §2 "Media"). Default: as stored.
   */
  queryFor?: (query: Query) => Query;
  logger?: Logger;
  observer?: ControllerObserver;
  /** Traces each turn, its pipeline call and deliveries; absent when tracing is off. */
  tracer?: MessageTracer;
  /**
   * Holds the turns of sessions in handoff instead of running them, and begins the handoff a
   * pipeline's answer asks for (docs/design.md §2 "Handoff"). Without it, a turn routed to
   * `__handoff__` ends as its pipeline missing.
   */
  handoffs?: Pick<HandoffDesk, 'holdTurn' | 'begin'>;
  /** How long after its timeout an unsettled turn is force-released. Default: 100 s (buzz's in-flight deadline). */
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
   * Drains (docs/design.md §2 "Shutdown"): refuses new messages, flushes debounce buffers and stops
   * claiming at once, lets the turns running now finish within `drainTimeoutMs`, then aborts
   * what still runs. Nothing queued starts — a retry waiting on backoff included: a durable
   * pool keeps it for the next start, otherwise it ends as `dropped/shutdown`.
   */
  stop(options: { drainTimeoutMs: number }): Promise<void>;
  /** Turns running now. */
  readonly running: number;
}

const DEFAULT_ORPHAN_GRACE_MS = 100_000;
const DEFAULT_ABORT_GRACE_MS = 2000;
const CLAIM_ERROR_RETRY_MS = 1000;
/** While the pool stays unreachable, one ERROR line per this long, not one per retry. */
const CLAIM_ERROR_LOG_EVERY_MS = 30_000;

/**
 * The controller (docs/design.md §2, after VikingBot and LangBot): a claim loop that takes runnable turns from the
 * pool — which takes the session slot, then the pipeline slot, then the global slot — and runs
 * each with an AbortSignal at the pipeline's timeout; a deadline sweep that aborts and releases
 * overdue turns; and the drain. How a turn ends is the settling policy's (turn-settlement.ts).
 * It keeps no per-session state: a finished turn leaves nothing behind.
 */
export function createController(options: ControllerOptions): Controller {
  const { pool, pipelines, policies, outbox, tracer } = options;
  const logger = (options.logger ?? silentLogger).child({ component: 'controller' });
  const orphanGraceMs = options.orphanGraceMs ?? DEFAULT_ORPHAN_GRACE_MS;
  const abortGraceMs = options.abortGraceMs ?? DEFAULT_ABORT_GRACE_MS;
  const now = options.now ?? Date.now;
  const { addThrough } = options;

  /** Stores a turn's replies by `add`, in the turn's trace when it has one. */
  async function traced<T>(
    entry: RunningTurn,
    query: Query,
    delivery: Delivery,
    add: () => Promise<T>,
  ): Promise<T> {
    let added: T | undefined;
    const adding = async () => {
      added = await add();
      crashPoint('outbox.after-add');
    };
    await (entry.trace === undefined || tracer === undefined
      ? adding()
      : tracer.delivery(entry.trace.span, query, delivery.replies, adding));
    return added as T;
  }

  const settlement = createTurnSettlement({
    pool,
    outcomes: options.outcomes,
    storeReplies: (entry, query, delivery) => traced(entry, query, delivery, () => outbox.add(delivery)),
    storeRepliesThrough:
      addThrough === undefined
        ? undefined
        : (entry, query, delivery, complete) =>
            traced(entry, query, delivery, () => addThrough(delivery, complete)),
    // While not stopping, a turn's end claims this controller's next turn in the same pool step.
    settleOptions: (entry) =>
      stopped
        ? undefined
        : {
            claimNext: (turn) => {
              entry.next = turn;
            },
          },
    observer: options.observer,
    random: options.random ?? Math.random,
    now,
  });

  const running = new IndexedSet<RunningTurn>();
  let started = false;
  let stopped = false;
  let pumping = false;
  let pumpAgain = false;
  /** The claim loop now running, if any: the drain waits for it before taking what is queued. */
  let claiming: Promise<void> = Promise.resolve();
  let idleWaiters: Array<() => void> = [];
  let stopping: Promise<void> | undefined;
  let unsubscribe: (() => void) | undefined;
  let unsubscribeClaimedAhead: (() => void) | undefined;
  let unsubscribeLeaseLost: (() => void) | undefined;
  /** When the claim loop last logged a failure, and how many failed since. */
  let claimErrorLoggedAt = Number.NEGATIVE_INFINITY;
  let claimErrorsUnlogged = 0;

  /** Starts turns until the pool has nothing runnable; one claim loop at a time. */
  function pump(): void {
    if (!started || stopped) return;
    if (pumping) {
      pumpAgain = true;
      return;
    }
    pumping = true;
    claiming = claimRunnable();
  }

  async function claimRunnable(): Promise<void> {
    try {
      do {
        pumpAgain = false;
        while (!stopped) {
          const turn = await pool.claim();
          if (turn === null) break;
          // The drain may have begun while the claim was on its way: hand the turn back rather
          // than start it after the stop (its messages go back to the head of their session).
          if (stopped) {
            await pool.abandon(turn, { ran: false });
            break;
          }
          startTurn(turn);
          // The pool saw nothing more to claim: a claim now would find nothing (it wakes the loop
          // through `onRunnable` when that changes).
          if (!turn.more) break;
        }
      } while (pumpAgain && !stopped);
    } catch (err) {
      claimFailed(err);
      setTimeout(pump, CLAIM_ERROR_RETRY_MS).unref();
    } finally {
      pumping = false;
    }
  }

  /** Logs a failed claim, at most once per `CLAIM_ERROR_LOG_EVERY_MS` with the count in between. */
  function claimFailed(err: unknown): void {
    claimErrorsUnlogged += 1;
    const at = now();
    if (at - claimErrorLoggedAt < CLAIM_ERROR_LOG_EVERY_MS) return;
    logger.error(
      { err, failures: claimErrorsUnlogged, retryInMs: CLAIM_ERROR_RETRY_MS },
      'claim failed: the pool is unreachable, retrying',
    );
    claimErrorLoggedAt = at;
    claimErrorsUnlogged = 0;
  }

  /**
   * The pool no longer holds this turn for us (docs/design.md §5): another replica may run it now.
   * It is aborted and settles nothing; the pool already said so, and a settlement would be `lost`.
   */
  function leaseLost(token: string): void {
    for (const entry of running.values()) {
      if (entry.turn.lease.token !== token) continue;
      // A settlement under way (waiting for the store) sees the flag and gives up as `lost`.
      entry.leaseLost = true;
      if (entry.decided) continue;
      entry.decided = true;
      entry.abort(new SwitchboardError('SB_LEASE_LOST'));
      entry.logger.warn(
        { attempt: entry.turn.attempt },
        'lease lost: aborting the turn; recording no outcome',
      );
      options.observer?.turnEnded?.(entry.turn, 'lost', now() - entry.startedAt);
    }
  }

  /** Wakes the drain once no turn of this controller runs; what is queued does not count. */
  function checkIdle(): void {
    if (running.size > 0) return;
    const waiters = idleWaiters;
    idleWaiters = [];
    for (const resolve of waiters) resolve();
  }

  // One timer for every running turn's deadline, instead of two timers per turn: it is armed for
  // the earliest deadline and, when it fires, scans the running turns (at most the global limit).
  const sweepTimer = new WakeTimer(sweep, now);

  function sweep(): void {
    const at = now();
    let next = Number.POSITIVE_INFINITY;
    for (const entry of running.values()) {
      if (entry.decided) continue;
      // Decided at once when there is none (`pipelineMissing`).
      const policy = entry.policy as PipelinePolicy;
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
    const policy = policies.get(turn.pipeline) ?? (turn.pipeline === HANDOFF ? HANDOFF_POLICY : undefined);
    const entry = new RunningTurn(turn, now(), policy, orphanGraceMs, logger);
    if (tracer !== undefined) {
      const span = tracer.startTurn(turn, policy, entry.startedAt);
      entry.trace = { span, logFields: tracer.logFields(span) };
    }
    running.add(entry);
    entry.finished = runTurn(entry, pipeline, policy);
  }

  /**
   * The turn no longer runs. Its slot was freed by the pool, which claimed the next turn with it
   * when it could (started here) and wakes the claim loop itself when more may run
   * (`onRunnable`): pumping here too started a second claim loop per turn that mostly found
   * nothing. What is left to check is whether a drain may end.
   */
  async function endTurn(entry: RunningTurn): Promise<void> {
    const { next } = entry;
    entry.next = undefined;
    if (next !== undefined) await startClaimed(next);
    running.delete(entry);
    checkIdle();
  }

  /**
   * Starts a turn its predecessor's settlement claimed (`SettleOptions.claimNext`), as the claim
   * loop starts one: after the previous turn's outcomes were recorded, or handed back unrun when
   * the drain began meanwhile. The ending turn still counts as running until then, so the drain
   * waits for the hand-back.
   */
  async function startClaimed(turn: ClaimedTurn): Promise<void> {
    if (!stopped) {
      startTurn(turn);
      return;
    }
    try {
      await pool.abandon(turn, { ran: false });
    } catch (err) {
      logger.warn({ err, turn: turn.id }, 'handing back a turn claimed during the drain failed');
    }
  }

  /** Runs the pipeline and settles the turn. The whole turn is this one async function. */
  async function runTurn(
    entry: RunningTurn,
    pipeline: Pipeline | undefined,
    policy: PipelinePolicy | undefined,
  ): Promise<void> {
    try {
      if (options.handoffs !== undefined) {
        const hold = await holdForHandoff(entry, policy);
        if (hold !== 'run') return;
      }
      if (pipeline === undefined || policy === undefined) {
        await settlement.pipelineMissing(entry);
        return;
      }
      if (entry.turn.messages.some((queued) => queued.attempt > policy.retry.maxAttempts)) {
        await settlement.exhaustedAtClaim(entry, policy);
        return;
      }
      const query = aggregate(entry.turn);
      options.observer?.turnStarted?.(entry.turn);
      sweepTimer.arm(entry.deadlineAt);
      const replyStream = options.streamReplies?.(query, entry.logger);
      entry.stream = replyStream?.push;
      let typing: TypingIndicator | undefined;
      let result: PipelineResult;
      try {
        const asked = options.queryFor?.(query) ?? query;
        // Started only once nothing before the pipeline call can throw: `finally` below stops it.
        typing = options.typing?.(query, entry.logger);
        result = await (entry.trace === undefined || tracer === undefined
          ? pipeline.run(asked, entry)
          : tracer.pipelineCall(entry.trace.span, pipeline.id, (headers) => {
              entry.traceHeaders = headers;
              return pipeline.run(asked, entry);
            })
        ).finally(() => typing?.stop());
        // Handled here, whatever becomes of the turn: a late answer's write is not waited for.
        const { saved } = result;
        if (saved !== undefined)
          result = {
            ...result,
            saved: saved.catch((err: unknown) => entry.logger.warn({ err }, 'pipeline write failed')),
          };
      } catch (error) {
        replyStream?.cancel();
        // A turn the sweep released as orphaned, or the drain abandoned, is decided already.
        if (!entry.decided) await settlement.failed(entry, policy, entry.abortReason ?? error);
        return;
      }
      crashPoint('pipeline.after-answer');
      if (entry.decided) {
        replyStream?.cancel();
        return;
      }
      if (result.handoff !== undefined) await beginAskedHandoff(entry, result.handoff.reason);
      // The preview in flight ends first, so that the final send edits the message it posted.
      const draft = await replyStream?.finish();
      if (!entry.decided) await settlement.answered(entry, query, result, draft);
    } catch (err) {
      logger.error({ err, turn: entry.turn.id }, 'turn settlement failed');
    } finally {
      entry.trace?.span.end();
      await endTurn(entry);
    }
  }

  /**
   * Holds the turn when its session is in handoff, and settles it then; `run` otherwise. A store
   * that fails is a failure of the turn, retried with its pipeline's backoff.
   */
  async function holdForHandoff(entry: RunningTurn, policy: PipelinePolicy | undefined) {
    const desk = options.handoffs as NonNullable<ControllerOptions['handoffs']>;
    let hold: Awaited<ReturnType<HandoffDesk['holdTurn']>>;
    try {
      hold = await desk.holdTurn(entry.turn);
    } catch (error) {
      // Its pipeline gone too, there is nothing to try again with: it ends as its pipeline missing.
      if (policy === undefined) {
        await settlement.pipelineMissing(entry);
        return 'failed' as const;
      }
      entry.logger.warn({ err: error }, 'handoff store failed: the turn will be tried again');
      await settlement.failed(entry, policy, error);
      return 'failed' as const;
    }
    if (hold !== 'run') await settlement.handedOff(entry, hold);
    return hold;
  }

  /**
   * The pipeline asked for an operator: the handoff begins before the turn completes, so that the
   * session's next turn is held. Its replies are sent either way; a store that fails leaves the
   * bot in charge, logged.
   */
  async function beginAskedHandoff(entry: RunningTurn, reason: string): Promise<void> {
    const last = entry.turn.messages.at(-1);
    try {
      await options.handoffs?.begin(entry.turn.session, {
        tenant: last?.message.tenant,
        reason,
        by: `pipeline:${entry.turn.pipeline}`,
        pipeline: entry.turn.pipeline,
        ...(last === undefined ? {} : { origin: last.message }),
      });
    } catch (err) {
      entry.logger.error({ err }, 'the pipeline asked for a handoff, which could not begin');
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
      await settlement.failed(entry, policy, timeout);
    } catch (err) {
      logger.error({ err, turn: entry.turn.id }, 'turn settlement failed');
    } finally {
      // The hung pipeline may never return to end it; a late return ends it again, which is a no-op.
      entry.trace?.span.end();
      await endTurn(entry);
    }
  }

  async function drain(drainTimeoutMs: number): Promise<void> {
    // Stop claiming first (docs/design.md §2: in-flight turns finish, what is queued stays): starting
    // queued work now would only have it aborted at the drain timeout.
    stopped = true;
    unsubscribe?.();
    unsubscribeClaimedAhead?.();
    pool.close();
    // A claim already on its way is handed back by the loop; wait for that before taking stock.
    await claiming;
    const idle = new Promise<'idle'>((resolve) => {
      idleWaiters.push(() => resolve('idle'));
      checkIdle();
    });
    if ((await within(idle, drainTimeoutMs)) === 'timeout') {
      const aborted = running.values();
      logger.warn({ running: aborted.length }, 'drain timeout: aborting running turns');
      for (const entry of aborted) entry.abort(new SwitchboardError('SB_SHUTDOWN'));
      await within(Promise.allSettled(aborted.map((entry) => entry.finished)), abortGraceMs);
      // Turns that ignored the abort are let go; their late results are ignored.
      for (const entry of aborted) await settlement.abandoned(entry);
    }
    if (!pool.durable) settlement.droppedAtShutdown(await pool.takeAll());
    sweepTimer.cancel();
    unsubscribeLeaseLost?.();
    logger.info({}, 'controller stopped');
  }

  return {
    start() {
      if (started) return;
      started = true;
      unsubscribe = pool.onRunnable(pump);
      // Registered until the drain begins: a turn claimed ahead then is handed back by the pool.
      unsubscribeClaimedAhead = pool.onClaimedAhead(startTurn);
      unsubscribeLeaseLost = pool.onLeaseLost(leaseLost);
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
