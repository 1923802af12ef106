import type { Logger } from '@switchboard/core';
import { describe, expect, it } from 'vitest';
import { createRefusalLog } from '../../src/inbound/refusal-log.js';

/** A logger that keeps its warnings. */
function warnings() {
  const lines: Array<{ fields: object; message: string }> = [];
  const logger: Logger = {
    debug() {},
    info() {},
    warn(fields, message) {
      lines.push({ fields, message });
    },
    error() {},
    child() {
      return logger;
    },
  };
  return { logger, lines };
}

describe('createRefusalLog', () => {
  describe('when refusals come in a flood', () => {
    it('logs one warning per minute, carrying how many were left out', () => {
      const { logger, lines } = warnings();
      let nowMs = 1_000_000;
      const note = createRefusalLog({ logger, now: () => nowMs });
      for (let i = 0; i < 100; i += 1) {
        note({ problem: 'bad signature' });
        nowMs += 100;
      }
      expect(lines).toEqual([
        { fields: { problem: 'bad signature', suppressed: 0 }, message: 'webhook call refused' },
      ]);
      nowMs = 1_000_000 + 60_000;
      note({ problem: 'stale timestamp' });
      expect(lines).toHaveLength(2);
      expect(lines[1]).toEqual({
        fields: { problem: 'stale timestamp', suppressed: 99 },
        message: 'webhook call refused',
      });
    });
  });

  describe('when the interval is set', () => {
    it('logs again once it has passed, not before, counting what it left out since the last line', () => {
      const { logger, lines } = warnings();
      let nowMs = 0;
      const note = createRefusalLog({ logger, intervalMs: 10_000, now: () => nowMs });
      note({ problem: 'a' });
      nowMs = 9_999;
      note({ problem: 'b' });
      nowMs = 10_000;
      note({ problem: 'c' });
      nowMs = 20_000;
      note({ problem: 'd' });
      expect(lines.map((line) => line.fields)).toEqual([
        { problem: 'a', suppressed: 0 },
        { problem: 'c', suppressed: 1 },
        { problem: 'd', suppressed: 0 },
      ]);
    });
  });
});
