import { describe, expect, it } from 'vitest';
import { splitReplies, splitRepliesWithAttachments } from '../../src/outbound/split-replies.js';

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

describe('splitRepliesWithAttachments', () => {
  describe('when replies carry attachments', () => {
    it("gives each reply's attachments as listed, then its text parts, numbered within the reply", () => {
      const image = { type: 'image' as const, url: 'https://example.com/a.png' };
      const file = { type: 'file' as const, data: 'AAAA' };
      expect(
        splitRepliesWithAttachments(
          [{ text: 'aaaabb', attachments: [image, file] }, { attachments: [file] }],
          4,
        ),
      ).toEqual([
        { attachment: image, part: 0 },
        { attachment: file, part: 1 },
        { text: 'aaaa', part: 2 },
        { text: 'bb', part: 3 },
        { attachment: file, part: 0 },
      ]);
    });
  });

  describe('when there are none', () => {
    it('gives the parts of splitReplies', () => {
      expect(splitRepliesWithAttachments([{ text: 'hi' }, { text: ' ' }], 10)).toEqual(
        splitReplies([{ text: 'hi' }, { text: ' ' }], 10),
      );
    });
  });
});
