import { afterEach, describe, expect, it } from 'vitest';
import { type ReloadSignal, holdReloadSignal } from '../src/reload-signal.js';

describe('holdReloadSignal', () => {
  let signal: ReloadSignal | undefined;
  afterEach(() => signal?.release());

  describe('when SIGHUP arrives before anyone handles it', () => {
    it('hands it over once to the handler, which then gets every later one', () => {
      signal = holdReloadSignal();
      process.emit('SIGHUP', 'SIGHUP');
      process.emit('SIGHUP', 'SIGHUP');
      const reloads: number[] = [];
      signal.handleWith(() => reloads.push(reloads.length));
      expect(reloads).toEqual([0]);
      process.emit('SIGHUP', 'SIGHUP');
      expect(reloads).toEqual([0, 1]);
    });
  });

  describe('when released', () => {
    it('stops listening, so SIGHUP has its default effect again', () => {
      const before = process.listenerCount('SIGHUP');
      signal = holdReloadSignal();
      expect(process.listenerCount('SIGHUP')).toBe(before + 1);
      signal.release();
      expect(process.listenerCount('SIGHUP')).toBe(before);
    });
  });
});
