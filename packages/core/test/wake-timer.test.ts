import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { WakeTimer } from '../src/structures/wake-timer.js';

describe('wake timer', () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: 0 });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  describe('when armed for several times', () => {
    it('wakes once, at the earliest, and can be armed again from its callback', () => {
      const wakes: number[] = [];
      const timer: WakeTimer = new WakeTimer(() => {
        wakes.push(Date.now());
        if (wakes.length === 1) timer.arm(300);
      }, Date.now);
      timer.arm(200);
      timer.arm(100);
      timer.arm(150);
      vi.advanceTimersByTime(1000);
      expect(wakes).toEqual([100, 300]);
    });
  });

  describe('when cancelled', () => {
    it('does not wake, and a later arm starts afresh', () => {
      const wakes: number[] = [];
      const timer = new WakeTimer(() => wakes.push(Date.now()), Date.now);
      timer.arm(100);
      timer.cancel();
      timer.arm(500);
      vi.advanceTimersByTime(1000);
      expect(wakes).toEqual([500]);
    });
  });
});
