import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { type Logger, silentLogger, startTyping } from '../../src/index.js';

/** A channel's typing whose calls settle when the test says so, each recorded with its clock time. */
function fakeTyping() {
  const calls: { at: number; signal: AbortSignal; resolve: () => void; reject: (error: Error) => void }[] =
    [];
  const send = (signal: AbortSignal) =>
    new Promise<void>((resolve, reject) => {
      calls.push({ at: Date.now(), signal, resolve, reject });
    });
  return { calls, send };
}

describe('startTyping', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  describe('while the turn runs', () => {
    it('sends a signal at once and one per interval', async () => {
      const { calls, send } = fakeTyping();
      const start = Date.now();
      const typing = startTyping({ send, intervalMs: 4_000, logger: silentLogger });
      expect(calls.map((call) => call.at - start)).toEqual([0]);
      calls[0]?.resolve();
      await vi.advanceTimersByTimeAsync(4_000);
      calls[1]?.resolve();
      await vi.advanceTimersByTimeAsync(4_000);
      expect(calls.map((call) => call.at - start)).toEqual([0, 4_000, 8_000]);
      typing.stop();
    });

    it('skips a signal that is due while the last one is still in flight', async () => {
      const { calls, send } = fakeTyping();
      const typing = startTyping({ send, intervalMs: 4_000, logger: silentLogger });
      await vi.advanceTimersByTimeAsync(8_000);
      expect(calls).toHaveLength(1);
      calls[0]?.resolve();
      await vi.advanceTimersByTimeAsync(4_000);
      expect(calls).toHaveLength(2);
      typing.stop();
    });

    it('logs a failed signal at debug and goes on', async () => {
      const debug = vi.fn();
      const logger: Logger = { ...silentLogger, debug, child: () => logger };
      const { calls, send } = fakeTyping();
      const typing = startTyping({ send, intervalMs: 4_000, logger });
      calls[0]?.reject(new Error('429'));
      await vi.advanceTimersByTimeAsync(4_000);
      expect(debug).toHaveBeenCalledWith({ err: expect.any(Error) }, 'typing signal failed');
      expect(calls).toHaveLength(2);
      typing.stop();
    });
  });

  describe('when stopped', () => {
    it('aborts the signal in flight and sends none after', async () => {
      const debug = vi.fn();
      const logger: Logger = { ...silentLogger, debug, child: () => logger };
      const { calls, send } = fakeTyping();
      const typing = startTyping({ send, intervalMs: 4_000, logger });
      typing.stop();
      expect(calls[0]?.signal.aborted).toBe(true);
      calls[0]?.reject(new Error('aborted'));
      await vi.advanceTimersByTimeAsync(20_000);
      expect(calls).toHaveLength(1);
      expect(debug).not.toHaveBeenCalled();
    });
  });
});
