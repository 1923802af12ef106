import { describe, expect, it } from 'vitest';
import { parseJsonObject } from '../../src/inbound/parse-json-object.js';

describe('parseJsonObject', () => {
  describe('when the body is a JSON object', () => {
    it('returns it', () => {
      expect(parseJsonObject('{"update_id": 1, "message": {}}')).toEqual({
        ok: true,
        value: { update_id: 1, message: {} },
      });
    });
  });

  describe('when the body is not JSON', () => {
    it('says malformed JSON', () => {
      for (const body of ['', '{"a": ', 'hello', '{a: 1}']) {
        expect(parseJsonObject(body)).toEqual({ ok: false, problem: 'malformed JSON' });
      }
    });
  });

  describe('when the body is JSON but no object', () => {
    it('refuses arrays, null and primitives', () => {
      for (const body of ['[]', '[{"a": 1}]', 'null', '1', '"text"', 'true']) {
        expect(parseJsonObject(body)).toEqual({ ok: false, problem: 'expected a JSON object' });
      }
    });
  });

  describe('when a key could reach a prototype', () => {
    it('refuses __proto__ and constructor.prototype at any depth, but not a plain constructor key', () => {
      for (const body of [
        '{"__proto__": {"admin": true}}',
        '{"message": {"entities": [{"__proto__": {}}]}}',
        '{"a": {"constructor": {"prototype": {"admin": true}}}}',
      ]) {
        expect(parseJsonObject(body)).toEqual({
          ok: false,
          problem: 'key __proto__ or constructor.prototype not allowed',
        });
      }
      expect(parseJsonObject('{"constructor": "text"}')).toEqual({
        ok: true,
        value: { constructor: 'text' },
      });
    });
  });
});
