import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { signBody, verifySignature } from '../src/signature.js';

const SECRET = 'shh-its-a-secret';
const BODY = '{"id":"turn-1","text":"hi"}';
const NOW_MS = 1_700_000_000_500;

describe('signBody', () => {
  describe('when signing a body', () => {
    it('writes t in unix seconds and v1 as hex HMAC-SHA256 of "<t>.<body>"', () => {
      const expected = createHmac('sha256', SECRET).update(`1700000000.${BODY}`).digest('hex');

      expect(signBody(SECRET, BODY, NOW_MS)).toBe(`t=1700000000,v1=${expected}`);
    });
  });
});

describe('verifySignature', () => {
  const header = signBody(SECRET, BODY, NOW_MS);

  describe('when the signature, body and time match', () => {
    it('accepts the request', () => {
      expect(verifySignature(SECRET, header, BODY, { nowMs: NOW_MS + 1000 })).toBe(true);
    });
  });

  describe('when the secret or the body differ', () => {
    it('refuses the request', () => {
      expect(verifySignature('another-secret', header, BODY, { nowMs: NOW_MS })).toBe(false);
      expect(verifySignature(SECRET, header, `${BODY} `, { nowMs: NOW_MS })).toBe(false);
    });
  });

  describe('when the signed time is outside the tolerance', () => {
    it('refuses a replay of an old request and a request from the future', () => {
      expect(verifySignature(SECRET, header, BODY, { nowMs: NOW_MS + 5 * 60_000 + 1000 })).toBe(false);
      expect(verifySignature(SECRET, header, BODY, { nowMs: NOW_MS - 6 * 60_000 })).toBe(false);
      expect(verifySignature(SECRET, header, BODY, { nowMs: NOW_MS + 20_000, toleranceMs: 10_000 })).toBe(
        false,
      );
    });
  });

  describe('when the header is missing or malformed', () => {
    it('refuses the request', () => {
      for (const bad of [
        undefined,
        null,
        '',
        'v1=abc',
        't=1700000000',
        't=abc,v1=00',
        't=1700000000,v1=zz',
      ]) {
        expect(verifySignature(SECRET, bad, BODY, { nowMs: NOW_MS })).toBe(false);
      }
    });
  });

  describe('when the header carries several v1 signatures (secret rotation)', () => {
    it('accepts it if any of them matches', () => {
      const rotated = `${signBody('old-secret', BODY, NOW_MS)},${header.split(',')[1]}`;

      expect(verifySignature(SECRET, rotated, BODY, { nowMs: NOW_MS })).toBe(true);
    });
  });
});
