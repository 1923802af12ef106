import { describe, expect, it } from 'vitest';
import { auditIdOf, outcomeKeyOf } from '../../src/model/outcome-id.js';
import type { Outcome } from '../../src/model/outcome.js';
import { queuedMessage } from '../harness.js';

const queued = queuedMessage('a', 'hello');
const deadLetter: Outcome = {
  kind: 'dead_lettered',
  reason: 'fatal_error',
  at: 1,
  message: queued.message,
  session: queued.session,
  pipeline: queued.pipeline,
  turnId: `t-${queued.message.id}`,
};

describe('audit ids', () => {
  describe('when the same end of a message is recorded again', () => {
    it('gives it the same id, whenever and by whichever turn it is written again', () => {
      const again: Outcome = { ...deadLetter, at: 99, attempt: 3, turnId: 't-merged-burst' };
      expect(auditIdOf(again)).toBe(auditIdOf(deadLetter));
      expect(auditIdOf(deadLetter)).toMatch(/^[0-9A-HJKMNP-TV-Z]{26}$/);
    });
  });

  describe('when a message ends again another way', () => {
    it('gives its replay, its delivery and another kind of end their own ids', () => {
      const ids = new Set([
        auditIdOf(deadLetter),
        auditIdOf({ ...deadLetter, replayOf: auditIdOf(deadLetter) }),
        auditIdOf({ ...deadLetter, reason: 'delivery_failed', deliveryId: `t-${queued.message.id}` }),
        auditIdOf({ ...deadLetter, reason: 'delivery_failed', deliveryId: 'replay:01JAUDIT' }),
        auditIdOf({ ...deadLetter, kind: 'dropped', reason: 'queue_overflow' }),
      ]);
      expect(ids.size).toBe(5);
    });
  });

  describe('when the enqueue script names a dropped message', () => {
    it('uses the key it builds from the request id: m:<request id>:dropped', () => {
      const dropped: Outcome = { ...deadLetter, kind: 'dropped', reason: 'queue_overflow', replayOf: 'A1' };
      expect(outcomeKeyOf(dropped)).toBe(`m:${queued.message.id}~A1:dropped`);
    });
  });
});
