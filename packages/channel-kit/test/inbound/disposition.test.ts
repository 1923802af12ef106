import type { IngressResult } from '@switchboard/core';
import { describe, expect, it } from 'vitest';
import { ACKNOWLEDGED, dispositionOf } from '../../src/inbound/disposition.js';

describe('dispositionOf', () => {
  describe('when ingress decided for good', () => {
    it('acknowledges', () => {
      const final: IngressResult[] = [
        { status: 'queued', pipeline: 'echo', session: 'telegram:tg:person:1', rule: null },
        { status: 'duplicate' },
        { status: 'ignored', reason: 'not_mentioned' },
        { status: 'discarded', rule: 'spam' },
      ];
      for (const result of final) expect(dispositionOf(result)).toBe(ACKNOWLEDGED);
    });
  });

  describe('when ingress refused', () => {
    it('asks for redelivery after the wait, coded by the reason', () => {
      expect(dispositionOf({ status: 'refused', reason: 'queue_full', retryAfterMs: 2000 })).toMatchObject({
        acknowledge: false,
        code: 'SB_QUEUE_FULL',
        retryAfterMs: 2000,
      });
      expect(dispositionOf({ status: 'refused', reason: 'draining', retryAfterMs: 500 })).toMatchObject({
        acknowledge: false,
        code: 'SB_DRAINING',
        retryAfterMs: 500,
      });
    });
  });
});
