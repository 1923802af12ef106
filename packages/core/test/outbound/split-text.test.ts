import { describe, expect, it } from 'vitest';
import { splitText } from '../../src/index.js';

describe('splitText', () => {
  describe('when the text fits', () => {
    it('returns it whole', () => {
      expect(splitText('short', 10)).toEqual(['short']);
      expect(splitText('x'.repeat(4096), 4096)).toEqual(['x'.repeat(4096)]);
    });
  });

  describe('when the text is longer than the limit', () => {
    it('cuts at the last newline of the window and drops it', () => {
      expect(splitText('aaaa bb\ncc dd', 10)).toEqual(['aaaa bb', 'cc dd']);
      expect(splitText('aaaaaa\nbbbb', 8)).toEqual(['aaaaaa', 'bbbb']);
    });

    it('cuts at the last space when no newline is in the second half', () => {
      expect(splitText('a\nbbbbb cccccc', 10)).toEqual(['a\nbbbbb', 'cccccc']);
      expect(splitText('aaaaa bbbbb', 8)).toEqual(['aaaaa', 'bbbbb']);
    });

    it('cuts at the limit when the only break is in the first half, rather than making tiny pieces', () => {
      expect(splitText('a bbbbbbbbbbb', 8)).toEqual(['a bbbbbb', 'bbbbb']);
    });

    it('cuts hard without separators and never splits a surrogate pair', () => {
      expect(splitText('abcdefghij', 4)).toEqual(['abcd', 'efgh', 'ij']);
      expect(splitText('abc😀def', 4)).toEqual(['abc', '😀de', 'f']);
      expect(splitText(`abc${'😀'.repeat(3)}`, 4)).toEqual(['abc', '😀😀', '😀']);
    });

    it('keeps every piece within the limit and loses no text but the separators', () => {
      const text = Array.from({ length: 3000 }, (_, index) => `word${index}`).join(' ');
      const pieces = splitText(text, 4096);
      expect(pieces.length).toBeGreaterThan(1);
      for (const piece of pieces) expect(piece.length).toBeLessThanOrEqual(4096);
      expect(pieces.join(' ')).toBe(text);
    });
  });

  describe('when the text or a piece is only whitespace', () => {
    it('drops it: platforms refuse empty messages', () => {
      expect(splitText('', 10)).toEqual([]);
      expect(splitText('  \n ', 10)).toEqual([]);
    });
  });
});
