import { describe, expect, it } from 'vitest';
import { secretTokenVerifier } from '../src/inbound/verify.js';

describe('secretTokenVerifier', () => {
  const verify = secretTokenVerifier('s3cret_Token-1');

  describe('when the header carries the configured secret', () => {
    it('accepts it', () => {
      expect(verify('s3cret_Token-1')).toBe(true);
    });
  });

  describe('when the header is wrong, missing or repeated', () => {
    it('refuses it', () => {
      expect(verify('s3cret_Token-2')).toBe(false);
      expect(verify('s3cret_Token-1 ')).toBe(false);
      expect(verify('')).toBe(false);
      expect(verify(undefined)).toBe(false);
      expect(verify(['s3cret_Token-1', 's3cret_Token-1'])).toBe(false);
    });
  });
});
