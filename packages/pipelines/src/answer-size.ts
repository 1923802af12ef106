import { SwitchboardError } from '@switchboard/core';

/**
 * Largest answer a pipeline keeps, in bytes: a body read whole, one line (or SSE event) of a
 * streamed answer, the text its deltas add up to; and one line of a worker's stdout, counted in
 * characters (line-reader.ts reads decoded text). Far beyond any reply, short of exhausting memory;
 * the factories take a lower one (`maxAnswerBytes`) for tests.
 */
export const MAX_ANSWER_BYTES = 16 * 1024 * 1024;

/** Where an answer is bounded: the pipeline it comes from, and the bound. */
export interface AnswerBound {
  pipeline: string;
  maxBytes: number;
}

/**
 * SB_PIPELINE_ANSWER_TOO_LARGE for `what` (e.g. `the answer`) of an answer past its bound. Fatal:
 * the same request would get the same answer again, and each retry would cost the backend's
 * work and the gateway's memory once more.
 */
export function answerTooLarge({ pipeline, maxBytes }: AnswerBound, what: string): SwitchboardError {
  return new SwitchboardError('SB_PIPELINE_ANSWER_TOO_LARGE', {
    message: `pipeline ${pipeline}: ${what} is larger than ${maxBytes} bytes`,
    details: { pipeline, max_bytes: maxBytes },
  });
}

/**
 * Counts the text a streamed answer adds up to, delta by delta: the returned function throws
 * `answerTooLarge` once the deltas passed to it exceed the bound, before that delta is kept or
 * passed on. Whoever keeps the text (the `openai` reply, the channel's preview) thus never holds
 * more than the bound.
 */
export function streamedTextBudget(bound: AnswerBound): (delta: string) => void {
  let bytes = 0;
  return (delta) => {
    bytes += Buffer.byteLength(delta);
    if (bytes > bound.maxBytes) throw answerTooLarge(bound, 'the streamed text');
  };
}
