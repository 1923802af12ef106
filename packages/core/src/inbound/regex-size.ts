/**
 * Bounds on the size of a routing `regex`. RE2 matches in time proportional to the
 * text's length times the size of the compiled pattern, and a counted repetition compiles to one
 * copy of its operand per count: `(?:\w+\s?){1000}$` blocked the event loop for ~0.7 s on a
 * 32 KiB message, a pattern of 16 characters. So a pattern is bounded three ways, each checked
 * on the text of a pattern RE2 has already accepted:
 *
 * - its length, `MAX_REGEX_LENGTH` characters;
 * - each counted repetition (`{n}`, `{n,}`, `{n,m}`), at most `MAX_REGEX_REPEAT` (RE2 allows 1000);
 * - its length with every counted repetition written out (`(ab){3}` → `ababab`), at most
 *   `MAX_REGEX_LENGTH` too: sixty `(?:\w+\s?){100}` in a row pass both other limits and took
 *   seconds, and nested repetitions multiply (`((?:\w+\s?){100}){10}`).
 */

/** The longest pattern, in characters, written or with its counted repetitions written out. */
export const MAX_REGEX_LENGTH = 1_000;

/** The largest count of a counted repetition (`{n}`, `{n,}`, `{n,m}`). */
export const MAX_REGEX_REPEAT = 100;

// `{n}`, `{n,}`, `{n,m}`: anything else RE2 reads as a literal `{`.
const COUNTED = /^\{(\d+)(?:,(\d*))?\}/;
// `(?i)`, `(?-s)`: flags for the rest of the group, no operand of a repetition.
const FLAGS_ONLY = /^\(\?[A-Za-z-]*\)/;

/** The character after the escape `\` at `at`: `\p{Greek}`, `\x{41}` and `\Q…\E` span more. */
function escapeEnd(pattern: string, at: number): number {
  const next = pattern[at + 1];
  if ((next === 'p' || next === 'P' || next === 'x') && pattern[at + 2] === '{') {
    const close = pattern.indexOf('}', at + 3);
    return close === -1 ? pattern.length : close + 1;
  }
  if (next === 'p' || next === 'P') return at + 3;
  if (next === 'x') return at + 4;
  return at + 2;
}

/** The character after the class `[…]` opening at `at` (`[]a]`, `[^]a]`, `[[:alpha:]]`, escapes). */
function classEnd(pattern: string, at: number): number {
  let index = at + 1;
  if (pattern[index] === '^') index += 1;
  if (pattern[index] === ']') index += 1;
  while (index < pattern.length && pattern[index] !== ']') {
    if (pattern[index] === '\\') index = escapeEnd(pattern, index);
    else if (pattern.startsWith('[:', index)) index = pattern.indexOf(':]', index + 2) + 2;
    else index += 1;
  }
  return index + 1;
}

/**
 * The first bound `pattern` passes (see above), worded for a config problem line, or null. The
 * pattern must already compile with RE2, so that its groups and classes are closed.
 */
export function regexSizeProblem(pattern: string): string | null {
  const why = 'matching time grows with the size of the pattern';
  if (pattern.length > MAX_REGEX_LENGTH) {
    return `regular expression is ${pattern.length} characters long, at most ${MAX_REGEX_LENGTH} (${why})`;
  }
  // One frame per open group: its written-out length so far and that of its last operand, which
  // a following `{n}` repeats.
  const frames: { length: number; last: number }[] = [{ length: 0, last: 0 }];
  let frame = frames[0]!;
  const operand = (length: number) => {
    frame.length += length;
    frame.last = length;
  };
  let index = 0;
  while (index < pattern.length) {
    const rest = pattern.slice(index);
    const char = pattern[index];
    let end = index + 1;
    if (char === '\\' && rest.startsWith('\\Q')) {
      const close = pattern.indexOf('\\E', index + 2);
      end = close === -1 ? pattern.length : close + 2;
      // A repetition after `\Q…\E` repeats its last character.
      frame.length += end - index - 1;
      frame.last = 1;
    } else if (char === '\\') {
      end = escapeEnd(pattern, index);
      operand(end - index);
    } else if (char === '[') {
      end = classEnd(pattern, index);
      operand(end - index);
    } else if (FLAGS_ONLY.test(rest)) {
      end = index + (FLAGS_ONLY.exec(rest)?.[0].length ?? 1);
    } else if (char === '(') {
      frame = { length: 0, last: 0 };
      frames.push(frame);
    } else if (char === ')') {
      const group = frames.pop()!;
      frame = frames[frames.length - 1]!;
      operand(group.length + 2);
    } else if (char === '{' && COUNTED.test(rest)) {
      const [counted, min, max] = COUNTED.exec(rest)!;
      const count = Math.max(Number(min), Number(max || 0));
      if (count > MAX_REGEX_REPEAT) {
        return `regular expression repeats ${counted}, at most {${MAX_REGEX_REPEAT}} (${why})`;
      }
      end = index + counted.length;
      frame.length += frame.last * (count - 1);
      frame.last = 0;
    } else if (char === '*' || char === '+' || char === '?' || char === '|') {
      frame.length += 1;
      frame.last = 0;
    } else {
      operand(1);
    }
    index = end;
  }
  const written = frames[0]!.length;
  if (written > MAX_REGEX_LENGTH) {
    return `regular expression is ${written} characters long with its counted repetitions written out, at most ${MAX_REGEX_LENGTH} (${why})`;
  }
  return null;
}
