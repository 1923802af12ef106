/** One event of a `text/event-stream`. */
export interface StreamEvent {
  /** The `event:` field; `message` when the event names none. */
  event: string;
  /** The `data:` lines, joined by `\n`. */
  data: string;
}

/**
 * Cuts a `text/event-stream` into events as its text arrives, in whatever pieces the network
 * delivers it (the HTML standard's rules for the fields the console reads). The console cannot
 * use `EventSource`: it sends no `Authorization` header, and the admin API wants one.
 *
 * Lines end with LF, CR or CRLF; a blank line ends an event; lines starting with `:` are
 * comments (keep-alives); one space after a field's colon is dropped; an event without data is
 * not dispatched; `id` and `retry` are ignored, as the console resumes by its own `after=`.
 */
export class EventStreamParser {
  /** Text after the last complete line. */
  private rest = '';
  private event = '';
  private data: string[] = [];

  /** Adds the next piece of text; returns the events it completed, in order. */
  push(text: string): StreamEvent[] {
    const buffer = this.rest + text;
    const events: StreamEvent[] = [];
    const lineEnd = /\r\n|\r|\n/g;
    let lineStart = 0;
    for (let end = lineEnd.exec(buffer); end !== null; end = lineEnd.exec(buffer)) {
      // A CR last in the text may be the first half of a CRLF cut between two pieces.
      if (end[0] === '\r' && end.index === buffer.length - 1) break;
      const event = this.line(buffer.slice(lineStart, end.index));
      if (event !== null) events.push(event);
      lineStart = end.index + end[0].length;
    }
    this.rest = buffer.slice(lineStart);
    return events;
  }

  /** Reads one line; returns the event a blank line completes. */
  private line(line: string): StreamEvent | null {
    if (line === '') {
      const event =
        this.data.length === 0 ? null : { event: this.event || 'message', data: this.data.join('\n') };
      this.event = '';
      this.data = [];
      return event;
    }
    if (line.startsWith(':')) return null;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? '' : line.slice(line[colon + 1] === ' ' ? colon + 2 : colon + 1);
    if (field === 'event') this.event = value;
    else if (field === 'data') this.data.push(value);
    return null;
  }
}
