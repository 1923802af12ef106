import { configReference } from './config-reference.js';

const START = '<!-- config-reference:start -->';
const END = '<!-- config-reference:end -->';

/** The text between the reference markers of docs/configuration.md, or null when they are missing. */
export function readReference(page: string): string | null {
  const start = page.indexOf(START);
  const end = page.indexOf(END);
  return start < 0 || end < start ? null : page.slice(start + START.length, end).trim();
}

/** `page` with the generated reference between its markers. */
export function replaceReference(page: string): string {
  const start = page.indexOf(START);
  const end = page.indexOf(END);
  if (start < 0 || end < start) throw new Error(`the page has no ${START} … ${END} markers`);
  return `${page.slice(0, start + START.length)}\n${configReference()}\n${page.slice(end)}`;
}
