import {
  formatIssues,
  type PipelineResult,
  ReplySchema,
  type SecretMasker,
  SwitchboardError,
} from '@switchboard/core';
import { z } from 'zod';
import { brokenStream, excerptOf } from './remote-errors.js';

/** How an `http` endpoint streams its answer: the media type of its response. */
export type StreamFormat = 'ndjson' | 'sse';

/** The format of a response of this `content-type`, or undefined when it is a plain JSON answer. */
export function streamFormatOf(contentType: string | null): StreamFormat | undefined {
  const mediaType = contentType?.split(';')[0]?.trim().toLowerCase();
  if (mediaType === 'application/x-ndjson') return 'ndjson';
  if (mediaType === 'text/event-stream') return 'sse';
  return undefined;
}

/** One object of a streamed answer: a piece of text, or the final replies that end the stream. */
const StreamLineSchema = z.union([
  z.strictObject({ delta: z.string() }),
  z.strictObject({ replies: z.array(ReplySchema) }),
]);

/**
 * Reads a streamed answer (docs/design.md §4 "Streaming"): objects `{"delta": "…"}`, each passed
 * to `onDelta` in order, then one `{"replies": […]}`, the whole answer, which ends it. NDJSON has
 * one object per line; SSE one per event, in its `data:` lines (other fields and comments are
 * ignored). A line that is not such an object is fatal (the backend is broken and would be
 * again), naming the line and the problem; a body that ends, or breaks, before the replies is
 * retryable.
 */
export async function readStreamedReply(
  pipeline: string,
  body: ReadableStream<Uint8Array>,
  format: StreamFormat,
  onDelta: ((delta: string) => void) | undefined,
  mask: SecretMasker,
): Promise<PipelineResult> {
  let lineNumber = 0;
  /** SSE: the `data:` lines of the event being read. */
  let data: string[] = [];

  /** The replies when `text` ends the answer, else undefined. */
  function handle(text: string, at: number): PipelineResult | undefined {
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw invalidLine(pipeline, at, 'not JSON', excerptOf(text, mask));
    }
    const parsed = StreamLineSchema.safeParse(json);
    if (!parsed.success) {
      const problem = 'expected {"delta": string} or {"replies": [{"text": string}, …]}';
      throw invalidLine(
        pipeline,
        at,
        `${problem} (${formatIssues(parsed.error).join('; ')})`,
        excerptOf(text, mask),
      );
    }
    if ('replies' in parsed.data) return { replies: parsed.data.replies };
    if (parsed.data.delta !== '') onDelta?.(parsed.data.delta);
    return undefined;
  }

  function lineOf(line: string): PipelineResult | undefined {
    lineNumber += 1;
    if (format === 'ndjson') return line.trim() === '' ? undefined : handle(line, lineNumber);
    if (line === '') {
      const event = data.join('\n');
      data = [];
      return event === '' ? undefined : handle(event, lineNumber);
    }
    if (line.startsWith('data:')) data.push(line.slice(line.startsWith('data: ') ? 6 : 5));
    return undefined;
  }

  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let pending = '';
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      pending += value;
      let newline = pending.indexOf('\n');
      while (newline !== -1) {
        const line = pending.slice(0, newline).replace(/\r$/, '');
        pending = pending.slice(newline + 1);
        const result = lineOf(line);
        // What may follow the replies is not read: the answer is whole.
        if (result !== undefined) return result;
        newline = pending.indexOf('\n');
      }
    }
    // The last line or event may lack its terminator.
    const result = lineOf(pending.replace(/\r$/, '')) ?? (format === 'sse' ? lineOf('') : undefined);
    if (result !== undefined) return result;
  } finally {
    reader.cancel().catch(() => {});
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
