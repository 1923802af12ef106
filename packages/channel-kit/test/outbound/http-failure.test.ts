import { describe, expect, it } from 'vitest';
import { failureOfHttpStatus } from '../../src/outbound/http-failure.js';
import { platformMessageOf } from '../../src/outbound/platform-message.js';

describe('platformMessageOf', () => {
  describe('when the body has a common error shape', () => {
    it('finds the message in each', () => {
      expect(platformMessageOf({ message: 'The request body has 1 error(s)' })).toBe(
        'The request body has 1 error(s)',
      );
      expect(platformMessageOf({ error: { message: 'Invalid OAuth access token.', code: 190 } })).toBe(
        'Invalid OAuth access token.',
      );
      expect(platformMessageOf({ ok: false, description: 'Bad Request: chat not found' })).toBe(
        'Bad Request: chat not found',
      );
      expect(platformMessageOf({ ok: false, error: 'channel_not_found' })).toBe('channel_not_found');
    });
  });

  describe('when the body has none', () => {
    it('is undefined', () => {
      for (const body of [undefined, null, 'text', 42, {}, { error: { code: 1 } }]) {
        expect(platformMessageOf(body)).toBeUndefined();
      }
    });
  });
});

describe('failureOfHttpStatus', () => {
  describe('when the answer carries a Retry-After and a message', () => {
    it('has the status, the wait in ms and the message', () => {
      const headers = new Headers({ 'retry-after': '3' });
      expect(failureOfHttpStatus(429, headers, { message: 'slow down' })).toEqual({
        status: 429,
        retryAfterMs: 3_000,
        description: 'slow down',
      });
    });
  });

  describe('when the body is a Graph error', () => {
    it('has its code and message', () => {
      const body = {
        error: { message: '(#131047) Re-engagement message', type: 'OAuthException', code: 131047 },
      };
      expect(failureOfHttpStatus(400, new Headers(), body)).toEqual({
        status: 400,
        code: 131047,
        description: '(#131047) Re-engagement message',
      });
    });
  });

  describe('when the answer carries neither', () => {
    it('has the status alone', () => {
      expect(failureOfHttpStatus(502, new Headers(), undefined)).toEqual({ status: 502 });
    });
  });
});
