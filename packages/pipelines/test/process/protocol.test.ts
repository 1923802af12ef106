import { describe, expect, it } from 'vitest';
import {
  cancelLine,
  parseWorkerLine,
  releaseLine,
  requestIdOpening,
  requestLine,
} from '../../src/process/protocol.js';
import { queryOf } from '../query.js';

describe('process protocol', () => {
  describe('when a worker writes a documented line', () => {
    it('classifies it by its key', () => {
      expect(parseWorkerLine('{"ready":true}')).toEqual({ kind: 'ready' });
      expect(parseWorkerLine('{"id":"0.1.1","replies":[{"text":"hi"}],"extra":1}')).toEqual({
        kind: 'answer',
        id: '0.1.1',
        result: { replies: [{ text: 'hi' }] },
      });
      expect(
        parseWorkerLine('{"id":"0.1.3","replies":[{"attachments":[{"type":"file","data":"AAAA"}]}]}'),
      ).toEqual({
        kind: 'answer',
        id: '0.1.3',
        result: { replies: [{ attachments: [{ type: 'file', data: 'AAAA' }] }] },
      });
      expect(parseWorkerLine('{"id":"0.1.2","replies":[],"handoff":{"reason":"needs a person"}}')).toEqual({
        kind: 'answer',
        id: '0.1.2',
        result: { replies: [], handoff: { reason: 'needs a person' } },
      });
      expect(parseWorkerLine('{"id":"0.1.1","error":"down","retryable":true}')).toEqual({
        kind: 'error',
        id: '0.1.1',
        message: 'down',
        retryable: true,
      });
      expect(parseWorkerLine('{"id":"0.1.1","error":"bad"}')).toMatchObject({ retryable: false });
      expect(parseWorkerLine('{"id":"0.1.1","progress":{"step":2}}')).toEqual({
        kind: 'progress',
        id: '0.1.1',
      });
      expect(parseWorkerLine('{"id":"0.1.1","delta":"Hel"}')).toEqual({
        kind: 'delta',
        id: '0.1.1',
        delta: 'Hel',
      });
      expect(parseWorkerLine('{"id":"0.1.1","delta":3}')).toMatchObject({ kind: 'invalid', id: '0.1.1' });
    });
  });

  describe('when a line was cut before its end', () => {
    it('names the request it opens with, and none when the id does not come first', () => {
      expect(requestIdOpening('{"id":"0.1.7","replies":[{"text":"xxxx')).toBe('0.1.7');
      expect(requestIdOpening(' { "id" : "0.1.7", "delta": "x')).toBe('0.1.7');
      expect(requestIdOpening('{"replies":[{"text":"x"}],"id":"0.1.7"')).toBeUndefined();
      expect(requestIdOpening('{"id":"0.1')).toBeUndefined();
    });
  });

  describe('when a line names a request and also says ready', () => {
    it('classifies it by the request: an answer, or invalid keeping the id', () => {
      expect(parseWorkerLine('{"ready":true,"id":"0.1.1","replies":[]}')).toEqual({
        kind: 'answer',
        id: '0.1.1',
        result: { replies: [] },
      });
      expect(parseWorkerLine('{"ready":true,"id":"0.1.1"}')).toMatchObject({ kind: 'invalid', id: '0.1.1' });
    });
  });

  describe('when a worker writes anything else', () => {
    it('reports it invalid, keeping the request id it named', () => {
      expect(parseWorkerLine('not json')).toEqual({ kind: 'invalid', problems: ['not JSON'] });
      expect(parseWorkerLine('[1]')).toEqual({ kind: 'invalid', problems: ['not a JSON object'] });
      expect(parseWorkerLine('{"hello":1}')).toMatchObject({ kind: 'invalid', id: undefined });
      const malformed = parseWorkerLine('{"id":"0.1.1","replies":[{"txt":"hi"}]}');
      expect(malformed).toMatchObject({ kind: 'invalid', id: '0.1.1' });
      expect(malformed.kind === 'invalid' && malformed.problems).toEqual([
        'replies[0]: needs a text or at least one attachment',
      ]);
      const badFile = parseWorkerLine(
        '{"id":"0.1.1","replies":[{"attachments":[{"type":"image","url":"ftp://x/a.png"}]}]}',
      );
      expect(badFile.kind === 'invalid' && badFile.problems).toEqual([
        'replies[0].attachments[0].url: must be an http or https URL',
      ]);
    });
  });

  describe('when the gateway writes', () => {
    it('sends a turn as the http body with its own request id and the turn id, one line each', () => {
      const query = queryOf(['hi']);
      const request = JSON.parse(requestLine('0.1.7', query));
      expect(request).toMatchObject({ id: '0.1.7', turn_id: query.id, attempt: 2, text: 'hi' });
      expect(request.session.key).toBe(query.session);
      expect(cancelLine('0.1.7')).toBe('{"cancel":"0.1.7"}\n');
      expect(releaseLine('s')).toBe('{"release":"s"}\n');
    });
  });
});
