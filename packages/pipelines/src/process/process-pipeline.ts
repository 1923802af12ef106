import {
  createSecretMasker,
  durationMs,
  type Logger,
  numeric,
  type Pipeline,
  secretField,
  secretValues,
} from '@switchboard/core';
import { z } from 'zod';
import { MAX_ANSWER_BYTES } from '../answer-size.js';
import { RunAsSchema, type WorkerIdentity } from './run-as.js';
import { createWorkerPool } from './worker-pool.js';

/**
 * `pipelines[]` keys of `type: process`: long-lived worker processes speaking line-delimited JSON
 * on stdin/stdout (protocol.ts, packages/pipelines/README.md "process").
 */
export const ProcessPipelineOptionsSchema = z.strictObject({
  type: z.literal('process'),
  /** The worker program: a path or a name on `PATH`, run without a shell. */
  command: z.string().min(1),
  args: z.array(z.string()).default([]),
  /**
   * Set for the workers, over the few variables they take from the gateway's environment (PATH,
   * HOME, LANG, LC_ALL, TMPDIR, TZ); the values are secrets (API keys).
   */
  env: secretField(z.record(z.string(), z.string())).optional(),
  /** Gives the workers the gateway's whole environment, its secrets included. */
  inherit_env: z.boolean().default(false),
  /** Working directory of the workers; default the gateway's. */
  cwd: z.string().min(1).optional(),
  /**
   * The user (and group) the workers run as, so that they cannot read the gateway's environment,
   * configuration or database; the gateway must be able to switch users (root). Default: the
   * gateway's own user, which gives a worker all the gateway can read.
   */
  run_as: RunAsSchema.optional(),
  /** Most worker processes, each started when a session first needs it. */
  workers: numeric(z.number().int().min(1).max(32)).prefault(1),
  /** A session without a turn this long is released, and its worker told so. */
  idle_timeout: durationMs({ min: '100ms', max: '24h' }).prefault('10m'),
  /** Most sessions bound to workers at once; a further session waits for one to be released. */
  max_active_sessions: numeric(z.number().int().min(1)).optional(),
  /** How long a worker may take from its start to its `{"ready": true}` line. */
  start_timeout: durationMs({ min: '100ms', max: '10m' }).prefault('30s'),
  /** How long a worker may take to answer a `{"cancel"}` before it is killed and restarted. */
  cancel_grace: durationMs({ min: '100ms', max: '5m' }).prefault('5s'),
  /** Restart delay after the n-th failure since a worker was ready: base_delay × 2^(n−1), at most max_delay. */
  restart: z
    .strictObject({
      base_delay: durationMs({ min: '100ms', max: '1h' }).prefault('5s'),
      max_delay: durationMs({ min: '100ms', max: '1h' }).prefault('300s'),
    })
    .prefault({}),
});
export type ProcessPipelineOptions = z.output<typeof ProcessPipelineOptionsSchema>;

/**
 * The checks of a `process` entry across its keys, for the config package to run on the whole
 * `pipelines[]` entry. With `max_active_sessions`, a new session's turn waits for a bound one to
 * be idle for `idle_timeout`, inside its run: within its `timeout` and holding one of the
 * pipeline's concurrency slots. An `idle_timeout` not shorter than `timeout` lets such a turn
 * only time out, while it blocks turns that could run. `inherit_env` with `run_as` would hand the
 * workers the very secrets `run_as` keeps from them.
 */
export function checkProcessPipelinePolicy(
  entry: ProcessPipelineOptions & { timeout: number },
  ctx: z.RefinementCtx,
): void {
  if (entry.max_active_sessions !== undefined && entry.idle_timeout >= entry.timeout) {
    ctx.addIssue({
      code: 'custom',
      path: ['idle_timeout'],
      message: `must be shorter than timeout (${entry.timeout} ms) when max_active_sessions is set: a turn waiting for a session place waits up to idle_timeout within its timeout`,
    });
  }
  if (entry.inherit_env && entry.run_as !== undefined) {
    ctx.addIssue({
      code: 'custom',
      path: ['inherit_env'],
      message:
        "must be false with run_as: it gives the workers the gateway's whole environment, the secrets run_as keeps from them; pass what they need in env",
    });
  }
}

export interface ProcessPipelineDeps {
  /** Where worker lifecycle events and stderr lines go. */
  logger: Logger;
  /**
   * Largest answer kept: a stdout line (characters) and the text of a turn's deltas (bytes);
   * default `MAX_ANSWER_BYTES` (16 MiB), lower in tests.
   */
  maxAnswerBytes?: number;
  /**
   * Who the workers run as: `run_as` resolved at start by `resolveWorkerIdentity`, which also
   * refuses one that cannot be applied. Required when `run_as` is set.
   */
  identity?: WorkerIdentity;
}

/**
 * A pipeline that runs turns on a pool of long-lived worker processes (buzz's AgentPool):
 * none until the first turn, at most `workers`, with session affinity, `max_active_sessions`,
 * idle release and restart backoff (worker-pool.ts).
 */
export function createProcessPipeline(
  id: string,
  options: ProcessPipelineOptions,
  { logger, maxAnswerBytes = MAX_ANSWER_BYTES, identity }: ProcessPipelineDeps,
): Pipeline {
  // Never fall back to the gateway's own user: that is the exposure `run_as` exists to close.
  if (options.run_as !== undefined && identity === undefined)
    throw new Error(`pipeline ${id}: run_as is set but no identity was resolved for it`);
  return createWorkerPool(id, {
    command: {
      command: options.command,
      args: options.args,
      env: options.env,
      inheritEnv: options.inherit_env,
      cwd: options.cwd,
      identity,
    },
    workers: options.workers,
    idleTimeoutMs: options.idle_timeout,
    maxActiveSessions: options.max_active_sessions ?? Number.POSITIVE_INFINITY,
    startTimeoutMs: options.start_timeout,
    cancelGraceMs: options.cancel_grace,
    restart: { baseDelayMs: options.restart.base_delay, maxDelayMs: options.restart.max_delay },
    logger,
    mask: createSecretMasker(secretValues(ProcessPipelineOptionsSchema, options)),
    maxAnswerBytes,
    now: Date.now,
  });
}
