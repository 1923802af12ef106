import type { Readable } from 'node:stream';

/**
 * Calls `onLine` for every `\n`-terminated line of `stream` (a trailing `\r` removed, and the
 * last unterminated line at the end). A line longer than `maxChars` is cut there and passed with
 * `truncated: true` — whether it came in one chunk or many — and the rest of it is skipped: a
 * worker writing without newlines must not grow the gateway's memory without bound.
 */
export function readLines(
  stream: Readable,
  maxChars: number,
  onLine: (line: string, truncated: boolean) => void,
): void {
  let buffered = '';
  let skipping = false;
  const emit = (line: string, truncated: boolean) => {
    const text = line.endsWith('\r') ? line.slice(0, -1) : line;
    if (text.length > maxChars) onLine(text.slice(0, maxChars), true);
    else onLine(text, truncated);
  };
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    let start = 0;
    for (let newline = chunk.indexOf('\n'); newline >= 0; newline = chunk.indexOf('\n', start)) {
      if (!skipping) emit(buffered + chunk.slice(start, newline), false);
      buffered = '';
      skipping = false;
      start = newline + 1;
    }
    if (skipping) return;
    buffered += chunk.slice(start);
    if (buffered.length > maxChars) {
      emit(buffered.slice(0, maxChars), true);
      buffered = '';
      skipping = true;
    }
  });
  stream.on('end', () => {
    if (!skipping && buffered !== '') emit(buffered, false);
    buffered = '';
  });
}
