import { configReference } from './config-reference.js';

const START = '<!-- config-reference:start -->';
const END = '<!-- config-reference:end -->';

/** The text between the README's reference markers, or null when the markers are missing. */
export function readReference(readme: string): string | null {
  const start = readme.indexOf(START);
  const end = readme.indexOf(END);
  return start < 0 || end < start ? null : readme.slice(start + START.length, end).trim();
}

/** `readme` with the generated reference between its markers. */
export function replaceReference(readme: string): string {
  const start = readme.indexOf(START);
  const end = readme.indexOf(END);
  if (start < 0 || end < start) throw new Error(`README has no ${START} … ${END} markers`);
  return `${readme.slice(0, start + START.length)}\n${configReference()}\n${readme.slice(end)}`;
}
