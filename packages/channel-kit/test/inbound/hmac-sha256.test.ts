import { describe, expect, it } from 'vitest';
import { hmacSha256, verifyHmacSha256 } from '../../src/inbound/hmac-sha256.js';

// RFC 4231 test case 2.
const KEY = 'Jefe';
const DATA = 'what do ya want for nothing?';
const HEX = '5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843';

describe('hmacSha256', () => {
  it('computes the RFC 4231 value in hex and base64', () => {
    expect(hmacSha256(KEY, DATA, 'hex')).toBe(HEX);
    expect(hmacSha256(KEY, DATA, 'base64')).toBe(Buffer.from(HEX, 'hex').toString('base64'));
  });
});

describe('verifyHmacSha256', () => {
  describe('when the presented signature matches', () => {
    it('is true', () => {
      expect(verifyHmacSha256(KEY, DATA, HEX, 'hex')).toBe(true);
      expect(verifyHmacSha256(KEY, DATA, Buffer.from(HEX, 'hex').toString('base64'), 'base64')).toBe(true);
    });
  });

  describe('when the signature is forged, truncated, of another body or missing', () => {
    it('is false', () => {
      expect(verifyHmacSha256(KEY, DATA, HEX.replace('5b', '5c'), 'hex')).toBe(false);
      expect(verifyHmacSha256(KEY, DATA, HEX.slice(0, 10), 'hex')).toBe(false);
      expect(verifyHmacSha256(KEY, `${DATA} `, HEX, 'hex')).toBe(false);
      expect(verifyHmacSha256('other', DATA, HEX, 'hex')).toBe(false);
      expect(verifyHmacSha256(KEY, DATA, undefined, 'hex')).toBe(false);
      // The same bytes written in the other encoding are not what the platform sends.
      expect(verifyHmacSha256(KEY, DATA, HEX, 'base64')).toBe(false);
    });
  });
});
