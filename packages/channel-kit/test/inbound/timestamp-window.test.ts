import { describe, expect, it } from 'vitest';
import { checkTimestampWindow } from '../../src/inbound/timestamp-window.js';

const NOW_MS = 1_718_000_000_000;
const WINDOW_MS = 5 * 60_000;
const seconds = (ms: number) => String(Math.floor(ms / 1000));

describe('checkTimestampWindow', () => {
  describe('when the timestamp is within the window either way', () => {
    it('accepts it', () => {
      expect(checkTimestampWindow(seconds(NOW_MS), NOW_MS, WINDOW_MS)).toBeNull();
      expect(checkTimestampWindow(seconds(NOW_MS - WINDOW_MS), NOW_MS, WINDOW_MS)).toBeNull();
      expect(checkTimestampWindow(seconds(NOW_MS + WINDOW_MS), NOW_MS, WINDOW_MS)).toBeNull();
    });
  });

  describe('when the timestamp is stale', () => {
    it('refuses it as too old', () => {
      expect(checkTimestampWindow(seconds(NOW_MS - WINDOW_MS - 1000), NOW_MS, WINDOW_MS)).toBe('too old');
      expect(checkTimestampWindow('0', NOW_MS, WINDOW_MS)).toBe('too old');
    });
  });

  describe('when the timestamp is further ahead than the window', () => {
    it('refuses it as too far ahead', () => {
      expect(checkTimestampWindow(seconds(NOW_MS + WINDOW_MS + 1000), NOW_MS, WINDOW_MS)).toBe(
        'too far ahead',
      );
    });
  });

  describe('when the timestamp is not whole seconds', () => {
    it('refuses it as not a number', () => {
      for (const value of ['', 'soon', '1.5', '-1', ' 1718000000', '1e9', '9'.repeat(16)]) {
        expect([value, checkTimestampWindow(value, NOW_MS, WINDOW_MS)]).toEqual([value, 'not a number']);
      }
    });
  });
});
