import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createMemoryRateBuckets } from '../../src/memory/memory-rate-buckets.js';
import type { RateBucket, RateBuckets } from '../../src/ports/rate-buckets.js';
import { UNPACED, createSendPacer, type SendRates } from '../../src/outbound/send-pacer.js';

const TELEGRAM: SendRates = {
  enabled: true,
  perBot: { limit: 30, perMs: 1000, burst: 1 },
  perChat: { limit: 1, perMs: 1000, burst: 1 },
  perGroup: { limit: 20, perMs: 60_000, burst: 20 },
};

/** Memory buckets that record every take's bucket keys. */
function recordingBuckets() {
  const inner = createMemoryRateBuckets();
  const takes: string[][] = [];
  const buckets: RateBuckets = {
    take(list: readonly RateBucket[]) {
      takes.push(list.map((bucket) => bucket.key));
      return inner.take(list);
    },
    attempt: (list) => inner.attempt(list),
    giveBack: (list) => inner.giveBack(list),
  };
  return { buckets, takes };
}

describe('createSendPacer', () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: Date.UTC(2025, 0, 1) });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  describe('when a call may be skipped (a typing signal)', () => {
    it("takes only the bot's token, and only when it is free now, never waiting", async () => {
      const { buckets, takes } = recordingBuckets();
      const pacer = createSendPacer({ channel: 'tg', buckets, rates: TELEGRAM });
      expect(await pacer.tryPace()).toBe(true);
      // The bot's bucket (30/s, burst 1) is empty for 33 ms: skipped, not delayed.
      expect(await pacer.tryPace()).toBe(false);
      expect(takes).toEqual([['tg:bot'], ['tg:bot']]);
      // The chat's token is still there for the reply.
      await vi.advanceTimersByTimeAsync(40);
      expect(await pacer.pace({ id: '42', group: false }, new AbortController().signal)).toBe(0);
    });
  });

  describe('when calls go to one chat', () => {
    it('lets the first through at once and holds the next back one interval, reporting the wait', async () => {
      const waits: number[] = [];
      const pacer = createSendPacer({
        channel: 'tg',
        buckets: createMemoryRateBuckets(),
        rates: TELEGRAM,
        onPaced: (ms) => waits.push(ms),
      });
      const signal = new AbortController().signal;
      expect(await pacer.pace({ id: '42', group: false }, signal)).toBe(0);
      const second = pacer.pace({ id: '42', group: false }, signal);
      await vi.advanceTimersByTimeAsync(1000);
      expect(await second).toBe(1000);
      expect(waits).toEqual([0, 1000]);
    });
  });

  describe('when the chat is a group', () => {
    it("counts the call against the bot's, the chat's and the group's buckets", async () => {
      const { buckets, takes } = recordingBuckets();
      const pacer = createSendPacer({ channel: 'tg', buckets, rates: TELEGRAM });
      await pacer.pace({ id: '-100', group: true }, new AbortController().signal);
      const second = pacer.pace({ id: '7', group: false }, new AbortController().signal);
      // The bot's tokens come one every 34 ms.
      await vi.advanceTimersByTimeAsync(34);
      await second;
      expect(takes[0]).toEqual(['tg:bot', 'tg:chat:-100', 'tg:group:-100']);
      // The second asked again after its wait, for the same buckets.
      expect(new Set(takes.slice(1).map((keys) => keys.join(' ')))).toEqual(new Set(['tg:bot tg:chat:7']));
    });
  });

  describe('when the deadline passes while it waits', () => {
    it('rejects with the deadline and takes no token', async () => {
      const { buckets, takes } = recordingBuckets();
      const pacer = createSendPacer({ channel: 'tg', buckets, rates: TELEGRAM });
      await pacer.pace({ id: '42', group: false }, new AbortController().signal);
      const deadline = new AbortController();
      const paced = pacer.pace({ id: '42', group: false }, deadline.signal);
      const outcome = expect(paced).rejects.toThrow('deadline');
      await vi.advanceTimersByTimeAsync(500);
      deadline.abort(new Error('deadline'));
      await outcome;
      expect(takes).toHaveLength(2);
      // The chat's bucket still refills on time: nothing was taken by the abandoned call.
      await vi.advanceTimersByTimeAsync(500);
      expect(await pacer.pace({ id: '42', group: false }, new AbortController().signal)).toBe(0);
    });
  });

  describe.each([
    ['pacing is switched off', { ...TELEGRAM, enabled: false }],
    ['every rate is null', { enabled: true, perBot: null, perChat: null, perGroup: null }],
  ])('when %s', (_, rates) => {
    it('is UNPACED and never asks the buckets', async () => {
      const { buckets, takes } = recordingBuckets();
      const pacer = createSendPacer({ channel: 'tg', buckets, rates });
      expect(pacer).toBe(UNPACED);
      expect(await pacer.pace({ id: '1', group: true }, new AbortController().signal)).toBe(0);
      expect(takes).toEqual([]);
    });
  });
});
