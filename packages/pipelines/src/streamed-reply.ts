import {
  formatIssues,
  PipelineAnswerSchema,
  type PipelineResult,
  type SecretMasker,
  SwitchboardError,
  answerResult,
} from '@switchboard/core';
import { z } from 'zod';
import { type AnswerBound, streamedTextBudget } from './answer-size.js';
import { brokenStream, excerptOf } from './remote-errors.js';
import { type StreamFormat, streamEvents } from './stream-events.js';

/** One object of a streamed answer: a piece of text, or the final replies that end the stream. */
const DeltaLineSchema = z.strictObject({ delta: z.string() });
const AnswerLineSchema = PipelineAnswerSchema.strict();

/** The shape `json` must have: the answer's once it holds `replies`, so that problems name its fields. */
function lineSchemaOf(json: unknown) {
  return typeof json === 'object' && json !== null && 'replies' in json ? AnswerLineSchema : DeltaLineSchema;
}

/**
 * Reads a streamed answer (docs/design.md §4 "Streaming"): objects `{"delta": "…"}`, each passed
 * to `onDelta` in order, then one `{"replies": […]}`, the whole answer, which ends it. NDJSON has
 * one object per line; SSE one per event, in its `data:` lines (other fields and comments are
 * ignored). A line that is not such an object is fatal (the backend is broken and would be
 * again), naming the line and the problem; so is an answer past `bound` (a line, an event, or
 * the text of the deltas, counted whether a channel shows them or not: SB_PIPELINE_ANSWER_TOO_LARGE).
 * A body that ends, or breaks, before the replies is retryable.
 */
export async function readStreamedReply(
  bound: AnswerBound,
  body: AsyncIterable<Uint8Array>,
  format: StreamFormat,
  onDelta: ((delta: string) => void) | undefined,
  mask: SecretMasker,
): Promise<PipelineResult> {
  const { pipeline } = bound;
  const keep = streamedTextBudget(bound);
  for await (const { text, line } of streamEvents(body, format, bound)) {
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw invalidLine(pipeline, line, 'not JSON', excerptOf(text, mask));
    }
    const parsed = lineSchemaOf(json).safeParse(json);
    if (!parsed.success) {
      const problem =
        'expected {"delta": string} or {"replies": [{"text"?: string, "attachments"?: […]}, …]}';
      throw invalidLine(
        pipeline,
        line,
        `${problem} (${formatIssues(parsed.error).join('; ')})`,
        excerptOf(text, mask),
      );
    }
    // The answer is whole: what may follow is the caller's to drain, never parsed.
    if ('replies' in parsed.data) return answerResult(parsed.data);
    if (parsed.data.delta !== '') {
      keep(parsed.data.delta);
      onDelta?.(parsed.data.delta);
    }
  }
  throw brokenStream(
    pipeline,
    `the ${format === 'sse' ? 'event stream' : 'NDJSON stream'} ended before its {"replies": […]}`,
  );
}

function invalidLine(pipeline: string, line: number, problem: string, excerpt: string): SwitchboardError {
  return new SwitchboardError('SB_PIPELINE_FAILED', {
    message: `pipeline ${pipeline}: invalid stream: line ${line}: ${problem}`,
    details: { pipeline, line, problems: [problem], body: excerpt },
  });
}
