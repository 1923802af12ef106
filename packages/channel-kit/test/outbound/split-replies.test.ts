import { describe, expect, it } from 'vitest';
import { splitReplies } from '../../src/outbound/split-replies.js';

describe('splitReplies', () => {
  describe('when replies are longer than the limit', () => {
    it('cuts each in order, numbering the parts of each reply', () => {
      expect(splitReplies([{ text: 'aaaa bbbb' }, { text: 'cc' }], 5)).toEqual([
        { text: 'aaaa', part: 0 },
        { text: 'bbbb', part: 1 },
        { text: 'cc', part: 0 },
      ]);
    });
  });

  describe('when a reply is empty or blank', () => {
    it('gives no part for it', () => {
      expect(splitReplies([{ text: '' }, { text: ' \n ' }, { text: 'hi' }], 10)).toEqual([
        { text: 'hi', part: 0 },
      ]);
    });
  });
});
