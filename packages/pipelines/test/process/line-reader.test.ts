import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { readLines } from '../../src/process/line-reader.js';

function linesOf(chunks: string[], maxChars = 100): Promise<Array<[string, boolean]>> {
  const stream = new PassThrough();
  const lines: Array<[string, boolean]> = [];
  readLines(stream, maxChars, (line, truncated) => lines.push([line, truncated]));
  const ended = new Promise((resolve) => stream.on('end', resolve));
  for (const chunk of chunks) stream.write(chunk);
  stream.end();
  return ended.then(() => lines);
}

describe('readLines', () => {
  describe('when lines arrive split across chunks', () => {
    it('joins them, drops a trailing \\r and passes the last unterminated line at the end', async () => {
      expect(await linesOf(['{"a":', '1}\r\n{"b"', ':2}\n\n', 'tail'])).toEqual([
        ['{"a":1}', false],
        ['{"b":2}', false],
        ['', false],
        ['tail', false],
      ]);
    });
  });

  describe('when a line exceeds the limit', () => {
    it('passes its start once, truncated, skips its rest and goes on with the next line', async () => {
      expect(await linesOf(['0123456789', 'abcdef', 'ghij\nnext\n'], 8)).toEqual([
        ['01234567', true],
        ['next', false],
      ]);
    });

    it('cuts a whole line that came in one chunk as well', async () => {
      expect(await linesOf(['0123456789\nnext\n'], 8)).toEqual([
        ['01234567', true],
        ['next', false],
      ]);
    });
  });
});
