import { describe, expect, it } from 'vitest';
import { type Logger, lazyChild } from '../../src/index.js';

/** A logger that records the children made and each line with the bindings of its logger. */
function recordingLogger(
  bindings: object = {},
  made: object[] = [],
  lines: unknown[][] = [],
): Logger & {
  made: object[];
  lines: unknown[][];
} {
  const line =
    (level: string) =>
    (fields: object, message: string): void => {
      lines.push([level, { ...bindings, ...fields }, message]);
    };
  return {
    made,
    lines,
    debug: line('debug'),
    info: line('info'),
    warn: line('warn'),
    error: line('error'),
    child(childBindings) {
      made.push(childBindings);
      return recordingLogger({ ...bindings, ...childBindings }, made, lines);
    },
  };
}

describe('lazyChild', () => {
  it('makes no child until it logs, then one, with the bindings as they are at that moment', () => {
    const parent = recordingLogger();
    const state = { turn: 't1' };
    const logger = lazyChild(parent, () => ({ ...state }));
    expect(parent.made).toEqual([]);
    state.turn = 't2';
    logger.warn({ attempt: 1 }, 'first');
    logger.error({ attempt: 2 }, 'second');
    logger.child({ component: 'x' }).info({}, 'third');
    expect(parent.made).toEqual([{ turn: 't2' }, { component: 'x' }]);
    expect(parent.lines).toEqual([
      ['warn', { turn: 't2', attempt: 1 }, 'first'],
      ['error', { turn: 't2', attempt: 2 }, 'second'],
      ['info', { turn: 't2', component: 'x' }, 'third'],
    ]);
  });
});
