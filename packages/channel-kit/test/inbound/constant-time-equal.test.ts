import { describe, expect, it } from 'vitest';
import { constantTimeEqual } from '../../src/inbound/constant-time-equal.js';

describe('constantTimeEqual', () => {
  describe('when both strings are the same', () => {
    it('is true', () => {
      expect(constantTimeEqual('s3cret_Token-1', 's3cret_Token-1')).toBe(true);
      expect(constantTimeEqual('', '')).toBe(true);
    });
  });

  describe('when the strings differ in content or length', () => {
    it('is false without throwing on the length mismatch', () => {
      expect(constantTimeEqual('s3cret_Token-1', 's3cret_Token-2')).toBe(false);
      expect(constantTimeEqual('s3cret_Token-1', 's3cret_Token-1 ')).toBe(false);
      expect(constantTimeEqual('short', 'a much longer string than the other')).toBe(false);
      expect(constantTimeEqual('x', '')).toBe(false);
    });
  });
});
