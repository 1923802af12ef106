import {
  PipelineAnswerSchema,
  type PipelineResult,
  type Query,
  answerResult,
  formatIssues,
} from '@switchboard/core';
import { z } from 'zod';
import { turnBody } from '../turn-body.js';

// The line-delimited JSON a `process` pipeline and its workers speak over stdin/stdout, one JSON
// object per line (packages/pipelines/README.md "process"). Lines are told apart by their keys,
// so that a worker in any language needs no more than a JSON parser.

/**
 * What a worker may write, by the key that tells the line apart: `{"ready": true}` once started
 * (within `start_timeout`); `{"id", "replies"}` answers request `id`; `{"id", "error",
 * "retryable"}` fails it (retryable asks for the pipeline's retry policy); `{"id", "delta"}` is a
 * piece of its answer as it is written (shown by channels with previews, like an `http` stream's
 * deltas); `{"id", "progress"}` says work goes on (logged).
 */
const LINE_SCHEMAS = [
  ['ready', z.object({ ready: z.literal(true) }).transform(() => ({ kind: 'ready' as const }))],
  [
    'replies',
    z
      .object({ id: z.string(), ...PipelineAnswerSchema.shape })
      .transform(({ id, ...answer }) => ({ kind: 'answer' as const, id, result: answerResult(answer) })),
  ],
  [
    'error',
    z
      .object({ id: z.string(), error: z.string(), retryable: z.boolean().default(false) })
      .transform(({ id, error, retryable }) => ({ kind: 'error' as const, id, message: error, retryable })),
  ],
  [
    'delta',
    z
      .object({ id: z.string(), delta: z.string() })
      .transform(({ id, delta }) => ({ kind: 'delta' as const, id, delta })),
  ],
  [
    'progress',
    z
      .object({ id: z.string(), progress: z.unknown() })
      .transform(({ id }) => ({ kind: 'progress' as const, id })),
  ],
] as const;

/** A line a worker wrote, classified. `invalid` keeps the request id when the line had one. */
export type WorkerLine =
  | { kind: 'ready' }
  | { kind: 'answer'; id: string; result: PipelineResult }
  | { kind: 'error'; id: string; message: string; retryable: boolean }
  | { kind: 'delta'; id: string; delta: string }
  | { kind: 'progress'; id: string }
  | { kind: 'invalid'; id?: string; problems: string[] };

/** Classifies one line of a worker's stdout; never throws. */
export function parseWorkerLine(line: string): WorkerLine {
  let json: unknown;
  try {
    json = JSON.parse(line);
  } catch {
    return { kind: 'invalid', problems: ['not JSON'] };
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json)) {
    return { kind: 'invalid', problems: ['not a JSON object'] };
  }
  const { id } = json as { id?: unknown };
  const requestId = typeof id === 'string' ? id : undefined;
  // A line naming a request is about that request, whatever else it holds: taken for the
  // handshake it would be ignored, and the request would wait for ever.
  const entry = LINE_SCHEMAS.find(([key]) => key in json && !(key === 'ready' && 'id' in json));
  if (entry === undefined) {
    return {
      kind: 'invalid',
      id: requestId,
      problems: ['expected a ready, replies, error, delta or progress key'],
    };
  }
  const parsed = (entry[1] as z.ZodType<WorkerLine>).safeParse(json);
  return parsed.success
    ? parsed.data
    : { kind: 'invalid', id: requestId, problems: formatIssues(parsed.error) };
}

/**
 * The request a line names when it opens with its `id` (`{"id": "…", …`, as JSON writers put it
 * when the object is built id first); for a line cut before its end, which cannot be parsed.
 */
export function requestIdOpening(line: string): string | undefined {
  return /^\s*\{\s*"id"\s*:\s*"([^"\\]{1,100})"/.exec(line)?.[1];
}

/**
 * A request line: the turn as an `http` pipeline POSTs it, with `id` the id of this request (the
 * answer names it; every run gets a new one) and `turn_id` the turn's id (the same on every
 * attempt: deduplicate on it).
 */
export function requestLine(requestId: string, query: Query): string {
  return `${JSON.stringify({ ...turnBody(query), id: requestId, turn_id: query.id })}\n`;
}

/** Asks the worker to stop working on request `id`; it should answer it with an error soon. */
export function cancelLine(requestId: string): string {
  return `${JSON.stringify({ cancel: requestId })}\n`;
}

/** The session went idle past `idle_timeout`: the worker may drop its context. */
export function releaseLine(session: string): string {
  return `${JSON.stringify({ release: session })}\n`;
}
