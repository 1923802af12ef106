import { type AnswerBound, answerTooLarge } from './answer-size.js';

/** How a remote endpoint streams its answer: the media type of its response. */
export type StreamFormat = 'ndjson' | 'sse';

/** The format of a response of this `content-type`, or undefined when it is a plain answer. */
export function streamFormatOf(contentType: string | undefined): StreamFormat | undefined {
  const mediaType = contentType?.split(';')[0]?.trim().toLowerCase();
  if (mediaType === 'application/x-ndjson') return 'ndjson';
  if (mediaType === 'text/event-stream') return 'sse';
  return undefined;
}

/** One event of a streamed body: its text, and the line that ended it (for error messages). */
export interface StreamEvent {
  text: string;
  line: number;
}

const NEWLINE = 0x0a;
const decoder = new TextDecoder();

/**
 * The events of a streamed body, in order: NDJSON's non-blank lines; SSE's events, each the
 * `data:` lines between blank lines joined by newlines (other fields and comments are ignored).
 * The last line or event may lack its terminator. A line, or an SSE event's data, past
 * `bound.maxBytes` throws SB_PIPELINE_ANSWER_TOO_LARGE as soon as it gets there: a body that never
 * ends its line is cut, not buffered until the timeout. A consumer that stops early (`break`,
 * `return`) leaves the rest of the body unread; the caller drains or destroys it.
 */
export async function* streamEvents(
  body: AsyncIterable<Uint8Array>,
  format: StreamFormat,
  bound: AnswerBound,
): AsyncGenerator<StreamEvent> {
  let lineNumber = 0;
  /** SSE: the `data:` lines of the event being read, and their size. */
  let data: string[] = [];
  let dataBytes = 0;

  function eventOf(line: string, bytes: number): StreamEvent | undefined {
    lineNumber += 1;
    if (format === 'ndjson') return line.trim() === '' ? undefined : { text: line, line: lineNumber };
    if (line === '') {
      const text = data.join('\n');
      data = [];
      dataBytes = 0;
      return text === '' ? undefined : { text, line: lineNumber };
    }
    if (line.startsWith('data:')) {
      // An event of many data lines is bounded as one line is.
      dataBytes += bytes + 1;
      if (dataBytes > bound.maxBytes) throw answerTooLarge(bound, 'an event of the stream');
      data.push(line.slice(line.startsWith('data: ') ? 6 : 5));
    }
    return undefined;
  }

  // The line being read is kept as the raw pieces it came in and decoded once whole: a newline
  // byte never occurs inside a UTF-8 sequence, and a long line is neither copied nor searched
  // again per chunk.
  let pieces: Uint8Array[] = [];
  let pendingBytes = 0;
  function lineOf(last: Uint8Array): string {
    const text = decoder.decode(pieces.length === 0 ? last : Buffer.concat([...pieces, last]));
    pieces = [];
    pendingBytes = 0;
    return text.endsWith('\r') ? text.slice(0, -1) : text;
  }

  for await (const chunk of body) {
    let start = 0;
    for (let newline = chunk.indexOf(NEWLINE); newline !== -1; newline = chunk.indexOf(NEWLINE, start)) {
      const bytes = pendingBytes + newline - start;
      if (bytes > bound.maxBytes) throw answerTooLarge(bound, 'a line of the stream');
      const event = eventOf(lineOf(chunk.subarray(start, newline)), bytes);
      start = newline + 1;
      if (event !== undefined) yield event;
    }
    pendingBytes += chunk.length - start;
    if (pendingBytes > bound.maxBytes) throw answerTooLarge(bound, 'a line of the stream');
    if (start < chunk.length) pieces.push(chunk.subarray(start));
  }
  const bytes = pendingBytes;
  const last = eventOf(lineOf(new Uint8Array(0)), bytes);
  if (last !== undefined) yield last;
  if (format === 'sse') {
    const unterminated = eventOf('', 0);
    if (unterminated !== undefined) yield unterminated;
  }
}
