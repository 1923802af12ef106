import { IGNORING_OBSERVER, UNPACED } from '@switchboard/core';
import { describe, expect, it } from 'vitest';
import { channelPacing } from '../../src/outbound/channel-pacing.js';

const chat = { id: 'c1', group: false };
const rate = { limit: 100, perMs: 1_000, burst: 100 };

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
        { enabled: true, perBot: null, perChat: rate, perGroup: null },
        { observer },
      );
      await pacing.pacer.pace(chat, new AbortController().signal);
      expect(paced).toEqual([['tg', 0]]);
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
