import { IGNORING_OBSERVER, UNPACED } from '@switchboard/core';
import { describe, expect, it } from 'vitest';
import { channelPacing } from '../../src/outbound/channel-pacing.js';

const chat = { id: 'c1', group: false };
const rate = { limit: 100, perMs: 1_000, burst: 100 };
/** One call a minute: the first passes at once, a paced one would wait the minute. */
const slow = { limit: 1, perMs: 60_000, burst: 1 };

describe('channelPacing', () => {
  describe('when the rates are on', () => {
    it('paces into the chat and reports each wait to the observer, under the channel id', async () => {
      const paced: [string, number][] = [];
      const observer = {
        paced: (channel: string, waitedMs: number) => paced.push([channel, waitedMs]),
        rateLimited() {},
      };
      const pacing = channelPacing(
        'tg',
        { enabled: true, perBot: null, perChat: slow, perGroup: null },
        { observer },
      );
      await pacing.pacer.pace(chat, new AbortController().signal);
      // The wait is measured on the clock, so a loaded machine may see a millisecond or two.
      expect(paced).toEqual([['tg', expect.any(Number)]]);
      expect(paced[0]?.[1]).toBeLessThan(1_000);
      const next = pacing.pacer.pace(chat, AbortSignal.timeout(50));
      await expect(next).rejects.toThrow();
      expect(pacing.observer).toBe(observer);
    });
  });

  describe('when the rates are off and no observer is given', () => {
    it('never waits and ignores what it is told', () => {
      const pacing = channelPacing('tg', { enabled: false, perBot: rate, perChat: rate, perGroup: null }, {});
      expect(pacing.pacer).toBe(UNPACED);
      expect(pacing.observer).toBe(IGNORING_OBSERVER);
    });
  });
});
