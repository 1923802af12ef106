import { type Logger, SwitchboardError } from '@switchboard/core';
import { describe, expect, it } from 'vitest';
import { applyToSelection } from '../../src/admin/dead-letter-selection.js';

/** A logger that keeps its error lines. */
function errorLines() {
  const lines: Array<{ bindings: Record<string, unknown>; message: string }> = [];
  const logger: Logger = {
    debug() {},
    info() {},
    warn() {},
    error: (bindings, message) => lines.push({ bindings: bindings as Record<string, unknown>, message }),
    child: () => logger,
  };
  return { lines, logger };
}

describe('applyToSelection', () => {
  describe('when each id meets a different fate', () => {
    it('answers per id, with retry_after_ms where trying again may succeed', async () => {
      const { logger } = errorLines();
      const results = await applyToSelection(
        ['ok', 'missing', 'full'],
        async (id) => {
          if (id === 'missing')
            throw new SwitchboardError('SB_DEAD_LETTER_NOT_FOUND', { message: 'no dead letter' });
          if (id === 'full') throw new SwitchboardError('SB_QUEUE_FULL', { retryAfterMs: 2_000 });
          return { status: 'queued' };
        },
        logger,
      );
      expect(results).toEqual([
        { id: 'ok', ok: true, status: 'queued' },
        { id: 'missing', ok: false, error: { code: 'SB_DEAD_LETTER_NOT_FOUND', message: 'no dead letter' } },
        {
          id: 'full',
          ok: false,
          error: { code: 'SB_QUEUE_FULL', message: expect.any(String), retry_after_ms: 2_000 },
        },
      ]);
    });
  });

  describe('when an action fails inside the gateway', () => {
    it('logs the error with the id, and answers only that it failed', async () => {
      const { lines, logger } = errorLines();
      const cause = new Error('connection reset by the audit database');
      const results = await applyToSelection(
        ['a', 'b'],
        async (id) => {
          if (id === 'b') throw cause;
          throw new SwitchboardError('SB_DEAD_LETTER_NOT_FOUND', { message: 'no dead letter' });
        },
        logger,
      );
      expect(results[1]).toEqual({
        id: 'b',
        ok: false,
        error: { code: 'SB_HTTP_INTERNAL', message: 'internal error; see the gateway log' },
      });
      // Client errors are the caller's to read in the answer; only the internal one is logged.
      expect(lines).toEqual([
        {
          bindings: { err: cause, code: 'SB_HTTP_INTERNAL', deadLetterId: 'b' },
          message: 'dead letter action failed',
        },
      ]);
    });
  });
});
