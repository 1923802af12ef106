import { describe, expect, it } from 'vitest';
import { redact, redactValue } from '../../src/outbound/redact.js';

const TOKEN = '123456:secret-bot-token';

describe('redact', () => {
  describe('when the text holds a secret, plain or percent-encoded', () => {
    it('masks every occurrence', () => {
      expect(redact(`a ${TOKEN} b ${encodeURIComponent(TOKEN)}`, [TOKEN])).toBe('a *** b ***');
    });
  });

  describe('when no secret is configured', () => {
    it('returns the text unchanged', () => {
      expect(redact(`a ${TOKEN}`, [])).toBe(`a ${TOKEN}`);
    });
  });
});

describe('redactValue', () => {
  describe('when secrets sit deep in objects and arrays', () => {
    it('masks every string and keeps other values', () => {
      const value = { call: 'x', status: 401, list: [TOKEN, { inner: `url/${TOKEN}` }], none: null };
      expect(redactValue(value, [TOKEN])).toEqual({
        call: 'x',
        status: 401,
        list: ['***', { inner: 'url/***' }],
        none: null,
      });
    });
  });
});
