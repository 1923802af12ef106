import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import {
  type Logger,
  type PipelineResult,
  type Query,
  type SecretMasker,
  SwitchboardError,
  within,
} from '@switchboard/core';
import { answerTooLarge, streamedTextBudget } from '../answer-size.js';
import { abortError } from '../remote-errors.js';
import { readLines } from './line-reader.js';
import { guardProcessGroup } from './orphan-guard.js';
import { cancelLine, parseWorkerLine, releaseLine, requestIdOpening, requestLine } from './protocol.js';
import type { WorkerIdentity } from './run-as.js';

/** How to run a worker: a program and its arguments, never through a shell. */
export interface WorkerCommand {
  command: string;
  args: readonly string[];
  /** Set for the worker, over what it takes from the gateway's environment. */
  env: Readonly<Record<string, string>> | undefined;
  /** The whole gateway environment for the worker, not only `BASE_ENV_KEYS`. */
  inheritEnv: boolean;
  cwd: string | undefined;
  /** The user and group it runs as (`run_as`); the gateway's own when undefined. */
  identity: WorkerIdentity | undefined;
}

/**
 * What a worker takes from the gateway's environment by default: enough to find programs and
 * write files, none of the gateway's secrets (bot tokens, the admin token, database URLs), which
 * an agent's tools could otherwise read and leak.
 */
const BASE_ENV_KEYS = ['PATH', 'HOME', 'LANG', 'LC_ALL', 'TMPDIR', 'TZ'] as const;

function workerEnv({ env, inheritEnv, identity }: WorkerCommand): NodeJS.ProcessEnv {
  const base: NodeJS.ProcessEnv = inheritEnv
    ? { ...process.env }
    : Object.fromEntries(
        BASE_ENV_KEYS.flatMap((key) => (key in process.env ? [[key, process.env[key]]] : [])),
      );
  // Another user's worker gets its own home, not the gateway's (where it could not write anyway).
  if (identity !== undefined) {
    delete base.HOME;
    if (identity.home !== undefined) base.HOME = identity.home;
  }
  return { ...base, ...env };
}

export interface WorkerProcessOptions {
  pipeline: string;
  command: WorkerCommand;
  /** The worker's slot in the pool and how many times that slot has started one: 1, 2, … */
  slot: number;
  generation: number;
  startTimeoutMs: number;
  cancelGraceMs: number;
  logger: Logger;
  /** Masks its secrets in its stderr lines before they are cut. */
  mask: SecretMasker;
  /**
   * Largest answer kept: one stdout line (characters; past it the worker is killed as broken) and
   * the text of a request's deltas (bytes; past it the request fails for good and is cancelled).
   */
  maxAnswerBytes: number;
  /**
   * Called once, as soon as the process is gone or failed to start, with why; `clean` when it
   * exited with code 0 on its own while ready and holding no request (an idle exit, not a failure).
   */
  onExit(reason: string, clean: boolean): void;
}

/** stderr lines are logged cut to this length. */
const MAX_STDERR_LINE_CHARS = 4096;
/**
 * How much of a stderr line is read: masked, then cut to `MAX_STDERR_LINE_CHARS`. A secret (up
 * to the difference long) that straddles the cut is then masked whole, never half shown.
 */
const STDERR_READ_CHARS = 64 * 1024;
/**
 * After the process exits, how long its last lines may still be on their way: `exit` can come
 * before the pipe is read, and an answer written just before dying should still count.
 */
const EXIT_FLUSH_MS = 200;
/** How long a SIGKILLed process may take to be reported gone. */
const KILL_WAIT_MS = 2000;

/** A request sent to a worker: its answer, and when the worker is done with it. */
export interface WorkerRequest {
  answer: Promise<PipelineResult>;
  /**
   * Resolves once the worker no longer runs it: answered, or gone. After an abort this is later
   * than `answer`, which rejects at once.
   */
  finished: Promise<void>;
}

interface PendingRequest {
  resolve(result: PipelineResult): void;
  reject(error: unknown): void;
  /** Takes a piece of its answer: counted against the bound, then passed to the run's `stream`. */
  delta(text: string): void;
  /** Fails it with `error` at once and cancels it, as an abort does. */
  stop(error: unknown): void;
  /** The worker is done with it (`WorkerRequest.finished`). */
  finish(): void;
  /** Stops listening to the run's signal. */
  detach(): void;
  /** Set once the run was aborted and `{cancel}` sent: kills a worker that ignores it. */
  cancelTimer?: NodeJS.Timeout;
}

/**
 * One worker child process of a `process` pipeline and its side of the protocol (protocol.ts):
 * spawned at once in its own process group, ready once it writes `{"ready": true}` (or killed at
 * `startTimeoutMs`), then requests multiplexed by id. Once it has exited every request it held
 * fails as SB_PIPELINE_WORKER_EXITED (retryable) and whatever still arrives on its stdout — from a
 * process it left behind — is dropped and logged as a stale answer: the turn may already run again
 * on a newer generation of the slot.
 */
export class WorkerProcess {
  readonly slot: number;
  readonly generation: number;
  /** Resolves once the worker is ready; rejects with the reason when it dies or times out first. */
  readonly ready: Promise<void>;
  /** Resolves once the process is gone and every request it held has failed. */
  readonly exited: Promise<void>;
  readonly #options: WorkerProcessOptions;
  readonly #logger: Logger;
  readonly #child: ChildProcessWithoutNullStreams;
  readonly #pending = new Map<string, PendingRequest>();
  #sequence = 0;
  #state: 'starting' | 'ready' | 'exited' = 'starting';
  /** Set after the exit flush: from then on every answer is stale. */
  #retired = false;
  /** Why the gateway killed it, when it did: a better exit reason than `SIGKILL`. */
  #killReason: string | undefined = undefined;
  /** Set by `stop`: its exit is expected, not a failure. */
  #stopping = false;
  #startTimer: NodeJS.Timeout | undefined;
  /** Unlists its process group from those killed when the gateway exits (orphan-guard.ts). */
  #unguard: () => void = () => {};
  #markReady!: () => void;
  #failStart!: (error: Error) => void;
  #markExited!: () => void;

  constructor(options: WorkerProcessOptions) {
    this.#options = options;
    this.slot = options.slot;
    this.generation = options.generation;
    this.ready = new Promise((resolve, reject) => {
      this.#markReady = resolve;
      this.#failStart = reject;
    });
    // Waiters attach their own handlers; this one keeps a start nobody waits for from being unhandled.
    this.ready.catch(() => {});
    this.exited = new Promise((resolve) => {
      this.#markExited = resolve;
    });
    const { command, args, cwd, identity } = options.command;
    // Its own process group (detached): stopping the worker stops the tools it started too, and
    // a Ctrl-C meant for the gateway does not reach it before the drain does. With an identity,
    // libuv clears the supplementary groups, then sets the gid and the uid, in the child before
    // it runs the command.
    this.#child = spawn(command, args, {
      cwd,
      env: workerEnv(options.command),
      stdio: ['pipe', 'pipe', 'pipe'],
      detached: true,
      uid: identity?.uid,
      gid: identity?.gid,
    });
    if (this.#child.pid !== undefined) this.#unguard = guardProcessGroup(this.#child.pid);
    this.#logger = options.logger.child({ worker: options.slot, generation: options.generation });
    this.#child.on('error', (err) => this.#died(err.message));
    this.#child.on('exit', (code, signal) =>
      this.#died(signal === null ? `exited with code ${code}` : `killed by ${signal}`, code === 0),
    );
    // A worker that died leaves a broken pipe; its exit is handled above.
    this.#child.stdin.on('error', (err) => this.#logger.debug({ err }, 'worker stdin closed'));
    readLines(this.#child.stdout, options.maxAnswerBytes, (line, truncated) => this.#onLine(line, truncated));
    readLines(this.#child.stderr, STDERR_READ_CHARS, (line) =>
      this.#logger.info({ line: options.mask(line).slice(0, MAX_STDERR_LINE_CHARS) }, 'worker stderr'),
    );
    this.#startTimer = setTimeout(
      () => this.kill(`not ready within ${options.startTimeoutMs} ms (start_timeout)`),
      options.startTimeoutMs,
    );
    this.#logger.info({ pid: this.#child.pid, command }, 'worker starting');
  }

  get pid(): number | undefined {
    return this.#child.pid;
  }

  /**
   * Runs `query` on the worker; `answer` resolves its replies, and its `{"delta"}` lines go to
   * `stream`. An abort of `signal` rejects it at once, sends `{"cancel": id}` and kills the worker
   * if it has not answered that request `cancelGraceMs` later; so do deltas past
   * `maxAnswerBytes`, failing it for good. `finished` tells when the worker is done with it.
   */
  request(query: Query, signal: AbortSignal, stream?: (delta: string) => void): WorkerRequest {
    const { pipeline, slot, generation, cancelGraceMs, maxAnswerBytes } = this.#options;
    const finished = Promise.resolve();
    if (signal.aborted) return { answer: Promise.reject(abortError(pipeline, signal, undefined)), finished };
    if (this.#state !== 'ready')
      return { answer: Promise.reject(this.#exitedError('not running')), finished };
    this.#sequence += 1;
    const id = `${slot}.${generation}.${this.#sequence}`;
    let finish!: () => void;
    const done = new Promise<void>((resolve) => {
      finish = resolve;
    });
    const answer = new Promise<PipelineResult>((resolve, reject) => {
      const keep = streamedTextBudget({ pipeline, maxBytes: maxAnswerBytes });
      const onAbort = () => pending.stop(abortError(pipeline, signal, undefined));
      const pending: PendingRequest = {
        resolve,
        reject,
        delta: (text) => {
          try {
            keep(text);
          } catch (error) {
            pending.stop(error);
            return;
          }
          stream?.(text);
        },
        stop: (error) => {
          pending.detach();
          pending.cancelTimer = setTimeout(
            () => this.kill(`ignored a cancel for ${cancelGraceMs} ms (cancel_grace)`),
            cancelGraceMs,
          );
          this.#write(cancelLine(id));
          reject(error);
        },
        finish,
        detach: () => signal.removeEventListener('abort', onAbort),
      };
      this.#pending.set(id, pending);
      signal.addEventListener('abort', onAbort, { once: true });
      this.#write(requestLine(id, query));
    });
    return { answer, finished: done };
  }

  /** Tells the worker that `session` went idle: it may drop the session's context. */
  release(session: string): void {
    if (this.#state === 'ready') this.#write(releaseLine(session));
  }

  /** Kills the worker's process group at once; `reason` becomes its exit reason. */
  kill(reason: string): void {
    if (this.#state === 'exited') return;
    this.#killReason ??= reason;
    this.#logger.warn({ reason }, 'killing worker');
    this.#signalGroup('SIGKILL');
  }

  /**
   * Closes the worker's stdin (the protocol's "stop": finish and exit), kills it if it has not
   * exited within `timeoutMs`, and resolves once it is gone.
   */
  async stop(timeoutMs: number): Promise<void> {
    if (this.#state !== 'exited') {
      this.#stopping = true;
      this.#child.stdin.end();
      if ((await within(this.exited, timeoutMs)) === 'timeout')
        this.kill(`not stopped within ${timeoutMs} ms`);
    }
    await within(this.exited, KILL_WAIT_MS);
  }

  #write(line: string): void {
    if (this.#state !== 'exited' && this.#child.stdin.writable) this.#child.stdin.write(line);
  }

  #signalGroup(signal: NodeJS.Signals): void {
    const pid = this.#child.pid;
    if (pid === undefined) return;
    try {
      process.kill(-pid, signal);
    } catch {
      // The group is gone already (ESRCH): nothing left to stop.
    }
  }

  #onLine(line: string, truncated: boolean): void {
    if (truncated) {
      // Its stdout is cut mid-line, so the worker is killed as broken. The request the line
      // names fails for good, since the same answer would come again; its others, retryably.
      const { pipeline, maxAnswerBytes } = this.#options;
      const pending = this.#pending.get(requestIdOpening(line) ?? '');
      if (pending !== undefined && pending.cancelTimer === undefined)
        pending.stop(answerTooLarge({ pipeline, maxBytes: maxAnswerBytes }, 'a line of the worker'));
      this.kill(`wrote a line longer than ${maxAnswerBytes} characters`);
      return;
    }
    const parsed = parseWorkerLine(line);
    if (this.#retired) {
      if (parsed.kind !== 'ready') {
        this.#logger.warn(
          { id: 'id' in parsed ? parsed.id : undefined, kind: parsed.kind },
          'stale answer: its worker generation has exited; dropped',
        );
      }
      return;
    }
    switch (parsed.kind) {
      case 'ready':
        if (this.#state !== 'starting') {
          this.#logger.warn({ line: line.slice(0, 200) }, 'worker wrote ready again; ignored');
          return;
        }
        this.#state = 'ready';
        clearTimeout(this.#startTimer);
        this.#logger.info({ pid: this.pid }, 'worker ready');
        this.#markReady();
        return;
      case 'delta': {
        // A request answered, cancelled or unknown takes no more text.
        const pending = this.#pending.get(parsed.id);
        if (pending !== undefined && pending.cancelTimer === undefined) pending.delta(parsed.delta);
        return;
      }
      case 'progress':
        this.#logger.debug({ id: parsed.id }, 'worker progress');
        return;
      case 'answer':
        this.#settle(parsed.id, (pending) => pending.resolve(parsed.result));
        return;
      case 'error':
        this.#settle(parsed.id, (pending) =>
          pending.reject(
            new SwitchboardError('SB_PIPELINE_FAILED', {
              message: `pipeline ${this.#options.pipeline}: worker failed the turn: ${parsed.message}`,
              details: { pipeline: this.#options.pipeline, worker: this.slot, error: parsed.message },
              retryable: parsed.retryable,
            }),
          ),
        );
        return;
      case 'invalid':
        if (parsed.id !== undefined && this.#pending.has(parsed.id)) {
          this.#settle(parsed.id, (pending) =>
            pending.reject(
              new SwitchboardError('SB_PIPELINE_FAILED', {
                message: `pipeline ${this.#options.pipeline}: invalid answer: ${parsed.problems.join('; ')}`,
                details: { pipeline: this.#options.pipeline, worker: this.slot, problems: parsed.problems },
              }),
            ),
          );
          return;
        }
        this.#logger.warn(
          { problems: parsed.problems, line: line.slice(0, 200) },
          'worker wrote an invalid line',
        );
    }
  }

  /** Hands an answer to its request; an answer to a cancelled request only stops the kill timer. */
  #settle(id: string, settle: (pending: PendingRequest) => void): void {
    const pending = this.#pending.get(id);
    if (pending === undefined) {
      this.#logger.warn({ id }, 'unknown answer: no request with this id; dropped');
      return;
    }
    this.#pending.delete(id);
    pending.detach();
    pending.finish();
    if (pending.cancelTimer !== undefined) {
      clearTimeout(pending.cancelTimer);
      this.#logger.debug({ id }, 'cancelled request answered');
      return;
    }
    settle(pending);
  }

  #exitedError(reason: string): SwitchboardError {
    return new SwitchboardError('SB_PIPELINE_WORKER_EXITED', {
      message: `pipeline ${this.#options.pipeline}: worker ${this.slot} ${reason} before answering`,
      details: { pipeline: this.#options.pipeline, worker: this.slot, generation: this.generation, reason },
      retryable: true,
    });
  }

  #died(cause: string, exitedZero = false): void {
    if (this.#state === 'exited') return;
    const wasStarting = this.#state === 'starting';
    const clean = exitedZero && !wasStarting && this.#killReason === undefined && this.#pending.size === 0;
    this.#state = 'exited';
    clearTimeout(this.#startTimer);
    const reason = this.#killReason === undefined ? cause : `${this.#killReason} (${cause})`;
    // Tools the worker started in its group would otherwise live on, reparented.
    this.#signalGroup('SIGKILL');
    this.#unguard();
    if (wasStarting) this.#failStart(new Error(reason));
    if (this.#stopping || clean) this.#logger.info({ pid: this.pid, reason }, 'worker exited');
    else this.#logger.warn({ pid: this.pid, reason }, 'worker exited');
    this.#options.onExit(reason, clean);
    const { stdout } = this.#child;
    const flushed = stdout.closed
      ? Promise.resolve()
      : new Promise((resolve) => stdout.once('close', resolve));
    void within(flushed, EXIT_FLUSH_MS).then(() => {
      this.#retired = true;
      for (const [id, pending] of this.#pending) {
        this.#pending.delete(id);
        pending.detach();
        pending.finish();
        clearTimeout(pending.cancelTimer);
        if (pending.cancelTimer === undefined) pending.reject(this.#exitedError(reason));
      }
      this.#markExited();
    });
  }
}
