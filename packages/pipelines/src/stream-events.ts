/** How a remote endpoint streams its answer: the media type of its response. */
export type StreamFormat = 'ndjson' | 'sse';

/** The format of a response of this `content-type`, or undefined when it is a plain answer. */
export function streamFormatOf(contentType: string | undefined): StreamFormat | undefined {
  const mediaType = contentType?.split(';')[0]?.trim().toLowerCase();
  if (mediaType === 'application/x-ndjson') return 'ndjson';
  if (mediaType === 'text/event-stream') return 'sse';
  return undefined;
}

/** Longest line read: a body that never ends its line is cut, not buffered until the timeout. */
export const MAX_LINE_CHARS = 1024 * 1024;

/** One event of a streamed body: its text, and the line that ended it (for error messages). */
export interface StreamEvent {
  text: string;
  line: number;
}

/**
 * The events of a streamed body, in order: NDJSON's non-blank lines; SSE's events, each the
 * `data:` lines between blank lines joined by newlines (other fields and comments are ignored).
 * The last line or event may lack its terminator; a line past `MAX_LINE_CHARS` throws. A consumer that stops early (`break`, `return`)
 * leaves the rest of the body unread; the caller drains or destroys it.
 */
export async function* streamEvents(
  body: AsyncIterable<Uint8Array>,
  format: StreamFormat,
): AsyncGenerator<StreamEvent> {
  const decoder = new TextDecoder();
  let lineNumber = 0;
  /** SSE: the `data:` lines of the event being read. */
  let data: string[] = [];
  let dataChars = 0;

  function eventOf(line: string): StreamEvent | undefined {
    lineNumber += 1;
    if (format === 'ndjson') return line.trim() === '' ? undefined : { text: line, line: lineNumber };
    if (line === '') {
      const text = data.join('\n');
      data = [];
      dataChars = 0;
      return text === '' ? undefined : { text, line: lineNumber };
    }
    if (line.startsWith('data:')) {
      const piece = line.slice(line.startsWith('data: ') ? 6 : 5);
      dataChars += piece.length + 1;
      // An event of many data lines is bounded as one line is.
      if (dataChars > MAX_LINE_CHARS) throw new Error(`an event longer than ${MAX_LINE_CHARS} characters`);
      data.push(piece);
    }
    return undefined;
  }

  let pending = '';
  for await (const chunk of body) {
    // Only the new text can hold the next newline: a long line is not searched again per chunk.
    const searchFrom = pending.length;
    pending += decoder.decode(chunk, { stream: true });
    let newline = pending.indexOf('\n', searchFrom);
    while (newline !== -1) {
      const event = eventOf(pending.slice(0, newline).replace(/\r$/, ''));
      pending = pending.slice(newline + 1);
      if (event !== undefined) yield event;
      newline = pending.indexOf('\n');
    }
    if (pending.length > MAX_LINE_CHARS) throw new Error(`a line longer than ${MAX_LINE_CHARS} characters`);
  }
  pending += decoder.decode();
  const last = eventOf(pending.replace(/\r$/, ''));
  if (last !== undefined) yield last;
  if (format === 'sse') {
    const unterminated = eventOf('');
    if (unterminated !== undefined) yield unterminated;
  }
}
