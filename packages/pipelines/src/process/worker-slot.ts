import {
  type BackoffPolicy,
  backoffDelayMs,
  type Logger,
  type SecretMasker,
  SwitchboardError,
} from '@switchboard/core';
import { abortError } from '../remote-errors.js';
import { untilAborted } from './until-aborted.js';
import { type WorkerCommand, WorkerProcess } from './worker-process.js';

/**
 * `idle`: not running, started on first need (never started, or its worker exited cleanly while
 * idle); `starting`: spawned, not ready yet; `ready`: takes requests; `restarting`: its worker
 * exited after it was ready, restarting after the backoff (a turn waits for it); `failed`: its
 * worker could not start, restarting after the backoff (a turn fails at once); `stopped`: the
 * pipeline stopped.
 */
export type SlotState = 'idle' | 'starting' | 'ready' | 'restarting' | 'failed' | 'stopped';

export interface WorkerSlotOptions {
  pipeline: string;
  index: number;
  command: WorkerCommand;
  startTimeoutMs: number;
  cancelGraceMs: number;
  restart: BackoffPolicy;
  logger: Logger;
  /** Masks the worker's secrets in its stderr lines before they are cut. */
  mask: SecretMasker;
  /** Largest answer kept (worker-process.ts). */
  maxAnswerBytes: number;
  now: () => number;
  /** Its worker is gone: the sessions bound to it lose their context. */
  onWorkerGone(index: number): void;
}

/**
 * One place for a worker in the pool, across the processes that fill it: started on first need,
 * restarted `restart.baseDelayMs × 2^(n−1)` (at most `restart.maxDelayMs`) after its n-th failure
 * in a row — an exit or a failed start; a worker that gets ready resets n. Each process is a new
 * generation.
 */
export class WorkerSlot {
  readonly index: number;
  #state: SlotState = 'idle';
  #generation = 0;
  /** Failures since a worker of this slot was last ready: the exponent of the restart delay. */
  #failures = 0;
  #restarts = 0;
  #restartAt: number | undefined = undefined;
  #lastError: string | undefined = undefined;
  #worker: WorkerProcess | undefined = undefined;
  #ready: Promise<WorkerProcess> | undefined = undefined;
  #restartTimer: NodeJS.Timeout | undefined = undefined;
  /** While `restarting`: the next worker once ready, for the turns that wait for it. */
  #restarted: { worker: Promise<WorkerProcess>; settle(next: Promise<WorkerProcess>): void } | undefined =
    undefined;
  readonly #options: WorkerSlotOptions;

  constructor(options: WorkerSlotOptions) {
    this.#options = options;
    this.index = options.index;
  }

  get state(): SlotState {
    return this.#state;
  }

  /** Whether a session may be bound to it now: it is running, starting, or may be started. */
  get usable(): boolean {
    return this.#state === 'idle' || this.#state === 'starting' || this.#state === 'ready';
  }

  /** When a `restarting` or `failed` slot restarts (ms). */
  get restartAt(): number | undefined {
    return this.#restartAt;
  }

  /** Why its last worker exited or could not start. */
  get lastError(): string | undefined {
    return this.#lastError;
  }

  /**
   * Its worker once ready, started now if the slot is idle, waited for while it starts or
   * restarts: a worker that was ready and crashed usually comes back, so the turn waits within its
   * own run (its timeout aborts the wait) rather than spending an attempt. Rejects with
   * SB_PIPELINE_WORKER_UNAVAILABLE (retryable, after the restart) when the worker fails to start,
   * or the slot is `failed` (its command cannot start: a turn should not wait out the backoff).
   */
  worker(signal: AbortSignal): Promise<WorkerProcess> {
    const { pipeline } = this.#options;
    const abort = (aborted: AbortSignal) => abortError(pipeline, aborted, undefined);
    if (this.#state === 'idle') this.#start();
    if (this.#state === 'ready' && this.#worker !== undefined) return Promise.resolve(this.#worker);
    if (this.#state === 'starting' && this.#ready !== undefined)
      return untilAborted(this.#ready, signal, abort);
    if (this.#state === 'restarting' && this.#restarted !== undefined)
      return untilAborted(this.#restarted.worker, signal, abort);
    if (this.#state === 'stopped') return Promise.reject(new SwitchboardError('SB_SHUTDOWN'));
    return Promise.reject(this.unavailable());
  }

  /** SB_PIPELINE_WORKER_UNAVAILABLE for this slot, retryable when its restart is due. */
  unavailable(): SwitchboardError {
    const { pipeline, now } = this.#options;
    const retryAfterMs = this.#restartAt === undefined ? undefined : Math.max(0, this.#restartAt - now());
    return new SwitchboardError('SB_PIPELINE_WORKER_UNAVAILABLE', {
      message: `pipeline ${pipeline}: worker ${this.index} failed (${this.#lastError}); restart in ${retryAfterMs} ms`,
      details: { pipeline, worker: this.index, reason: this.#lastError, retryAfterMs },
      retryable: true,
      retryAfterMs,
    });
  }

  /** Tells its worker, if running, that `session` was released. */
  release(session: string): void {
    this.#worker?.release(session);
  }

  /** For `/admin/queues`. */
  snapshot() {
    const { now } = this.#options;
    return {
      index: this.index,
      state: this.#state,
      pid: this.#worker?.pid ?? null,
      generation: this.#generation,
      restarts: this.#restarts,
      failures: this.#failures,
      last_error: this.#lastError ?? null,
      restart_in_ms:
        (this.#state === 'failed' || this.#state === 'restarting') && this.#restartAt !== undefined
          ? Math.max(0, this.#restartAt - now())
          : null,
    };
  }

  /** No more restarts; its worker is stopped (stdin closed, killed past `timeoutMs`). */
  async stop(timeoutMs: number): Promise<void> {
    this.#state = 'stopped';
    clearTimeout(this.#restartTimer);
    this.#restarted?.settle(Promise.reject(new SwitchboardError('SB_SHUTDOWN')));
    this.#restarted = undefined;
    await this.#worker?.stop(timeoutMs);
  }

  #start(): void {
    this.#generation += 1;
    this.#state = 'starting';
    this.#restartAt = undefined;
    const { pipeline, command, startTimeoutMs, cancelGraceMs, logger, mask, maxAnswerBytes } = this.#options;
    const worker = new WorkerProcess({
      pipeline,
      command,
      slot: this.index,
      generation: this.#generation,
      startTimeoutMs,
      cancelGraceMs,
      logger,
      mask,
      maxAnswerBytes,
      onExit: (reason, clean) => this.#gone(worker, reason, clean),
    });
    this.#worker = worker;
    this.#ready = worker.ready.then(
      () => {
        if (this.#worker === worker && this.#state === 'starting') {
          this.#state = 'ready';
          // The command starts: what the backoff guards against is over. Left to grow, the count
          // made each later crash wait longer, and turns spent their attempts against the wait.
          this.#failures = 0;
        }
        return worker;
      },
      () => {
        throw this.#state === 'stopped' ? new SwitchboardError('SB_SHUTDOWN') : this.unavailable();
      },
    );
    // A restart nobody waits for must not fail as an unhandled rejection.
    this.#ready.catch(() => {});
  }

  #gone(worker: WorkerProcess, reason: string, clean: boolean): void {
    if (this.#worker !== worker) return;
    const wasStarting = this.#state === 'starting';
    this.#worker = undefined;
    if (this.#state === 'stopped') {
      this.#options.onWorkerGone(this.index);
      return;
    }
    if (clean) {
      // A worker may end itself when idle (to free memory): the next session that needs the slot
      // starts it again, with no backoff and no failure counted.
      this.#state = 'idle';
      this.#options.logger.info(
        { worker: this.index, reason },
        'worker exited while idle; starts on next need',
      );
      this.#options.onWorkerGone(this.index);
      return;
    }
    this.#failures += 1;
    const delayMs = backoffDelayMs(this.#failures, this.#options.restart);
    this.#state = wasStarting ? 'failed' : 'restarting';
    this.#lastError = reason;
    this.#restartAt = this.#options.now() + delayMs;
    if (!wasStarting) {
      let settle: (next: Promise<WorkerProcess>) => void = () => {};
      const next = new Promise<WorkerProcess>((resolve) => {
        settle = resolve;
      });
      // Nobody may be waiting when the restart fails to start or the pipeline stops.
      next.catch(() => {});
      this.#restarted = { worker: next, settle };
    }
    const fields = { worker: this.index, reason, failures: this.#failures, restartInMs: delayMs };
    // A worker that cannot start needs a human (bad command, missing dependency); a crash of a
    // running one is handled by the restart.
    if (wasStarting) this.#options.logger.error(fields, 'worker failed to start; restarting after backoff');
    else this.#options.logger.warn(fields, 'worker exited; restarting after backoff');
    this.#restartTimer = setTimeout(() => {
      if (this.#state !== 'failed' && this.#state !== 'restarting') return;
      this.#restarts += 1;
      this.#start();
      this.#restarted?.settle(this.#ready as Promise<WorkerProcess>);
      this.#restarted = undefined;
    }, delayMs);
    // A pending restart must not keep an otherwise finished process alive.
    this.#restartTimer.unref();
    // Last, once the slot is failed: the sessions it frees may let waiting turns bind, and those
    // must choose a usable slot, not this one.
    this.#options.onWorkerGone(this.index);
  }
}
