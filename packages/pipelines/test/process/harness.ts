import { mkdtempSync, readFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Logger, Pipeline, PipelineResult, Query } from '@switchboard/core';
import { afterEach } from 'vitest';
import {
  createProcessPipeline,
  type ProcessPipelineDeps,
  ProcessPipelineOptionsSchema,
} from '../../src/process/process-pipeline.js';
import { queryOf } from '../query.js';

export { eventually } from '@switchboard/testkit/eventually';
export { processExists, processState } from '@switchboard/testkit/process';

/** The test worker program (protocol of packages/pipelines/README.md "process"). */
export const ECHO_WORKER = fileURLToPath(new URL('../fixtures/echo-worker.mjs', import.meta.url));

export interface LogEntry {
  level: 'debug' | 'info' | 'warn' | 'error';
  msg: string;
  [field: string]: unknown;
}

/** A logger that keeps every line, bindings of its parents included. */
export function recordingLogger(
  lines: LogEntry[] = [],
  bindings: object = {},
): Logger & { lines: LogEntry[] } {
  const at =
    (level: LogEntry['level']) =>
    (fields: object, msg: string): void => {
      lines.push({ ...bindings, ...fields, level, msg });
    };
  return {
    lines,
    debug: at('debug'),
    info: at('info'),
    warn: at('warn'),
    error: at('error'),
    child: (more) => recordingLogger(lines, { ...bindings, ...more }),
  };
}

/** One event the worker recorded in $WORKER_LOG. */
export interface WorkerEvent {
  pid: number;
  at: number;
  event: 'start' | 'hold' | 'release' | 'turn' | 'late' | 'cancel' | 'answered' | 'exit' | 'wrote';
  session?: string;
  id?: string;
  n?: number;
  text?: string;
  attempt?: number;
  /** `cancel` of a flood, `wrote` of a huge line: the bytes written so far. */
  bytes?: number;
}

/** What the reply text of the echo worker says. */
export interface EchoAnswer {
  pid: number;
  session: string;
  n: number;
  text: string;
  held: number;
  /** The environment variable asked for by an `env <NAME>` turn, or null. */
  value?: string | null;
}

export function answerOf(result: PipelineResult): EchoAnswer {
  return JSON.parse(result.replies[0]?.text ?? '') as EchoAnswer;
}

let turns = 0;

/** A turn of `session` (a private chat id) with `text`; each call is a new turn id. */
export function turnOf(session: string, text: string, attempt = 1, id = `turn-${++turns}`): Query {
  return { ...queryOf([text], { chat: { type: 'person', id: session } }), id, attempt };
}

/** A run context aborted after `timeoutMs`, as the controller's pipeline timeout does. */
export function contextOf(logger: Logger, timeoutMs = 20_000) {
  return { signal: AbortSignal.timeout(timeoutMs), logger };
}

/**
 * Builds `process` pipelines running the echo worker with `$WORKER_LOG` in a fresh folder, and
 * stops each after its test.
 */
export function useProcessPipelines() {
  const started: Pipeline[] = [];
  afterEach(async () => {
    for (const pipeline of started.splice(0)) await pipeline.stop?.({ timeoutMs: 2000 });
  });
  return (
    options: Record<string, unknown> = {},
    env: Record<string, string> = {},
    deps: Omit<ProcessPipelineDeps, 'logger'> = {},
  ) => {
    const logPath = join(mkdtempSync(join(tmpdir(), 'switchboard-worker-')), 'worker.log');
    const logger = recordingLogger();
    const parsed = ProcessPipelineOptionsSchema.parse({
      type: 'process',
      command: process.execPath,
      args: [ECHO_WORKER],
      env: { WORKER_LOG: logPath, ...env },
      ...options,
    });
    const pipeline = createProcessPipeline('agent', parsed, { logger, ...deps });
    started.push(pipeline);
    return {
      pipeline,
      logger,
      /** The worker's events so far, in the order the workers wrote them. */
      events(): WorkerEvent[] {
        if (!existsSync(logPath)) return [];
        return readFileSync(logPath, 'utf8')
          .split('\n')
          .filter((line) => line !== '')
          .map((line) => JSON.parse(line) as WorkerEvent);
      },
    };
  };
}
