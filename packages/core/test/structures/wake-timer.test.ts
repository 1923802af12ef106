import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { WakeTimer } from '../../src/structures/wake-timer.js';

/** Node's longest timer delay; a longer one fires after 1 ms. */
const NODE_MAX_DELAY_MS = 2 ** 31 - 1;

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

  describe('when armed past the longest delay Node allows', () => {
    /** A timer whose clock reads are counted: a spinning timer reads it on every wake. */
    function countingTimer() {
      const counts = { wakes: 0, clockReads: 0 };
      const timer = new WakeTimer(
        () => {
          counts.wakes += 1;
        },
        () => {
          counts.clockReads += 1;
          return Date.now();
        },
      );
      return { timer, counts };
    }

    it('does not wake early and reads its clock once per clamped step, not every millisecond', () => {
      const { timer, counts } = countingTimer();
      const at = 3 * NODE_MAX_DELAY_MS;
      timer.arm(at);
      vi.advanceTimersByTime(10_000);
      expect(counts).toEqual({ wakes: 0, clockReads: 1 });
      vi.advanceTimersByTime(at - 10_000 - 1);
      expect(counts.wakes).toBe(0);
      expect(counts.clockReads).toBeLessThanOrEqual(10);
      vi.advanceTimersByTime(1);
      expect(counts.wakes).toBe(1);
      expect(Date.now()).toBe(at);
    });

    it('never wakes for NaN or an infinite time', () => {
      const { timer, counts } = countingTimer();
      timer.arm(Number.NaN);
      timer.arm(Number.POSITIVE_INFINITY);
      vi.advanceTimersByTime(10_000);
      expect(counts).toEqual({ wakes: 0, clockReads: 0 });
      // NaN did not displace a real time armed afterwards.
      timer.arm(Date.now() + 100);
      vi.advanceTimersByTime(100);
      expect(counts.wakes).toBe(1);
    });
  });
});
