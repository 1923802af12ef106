import { describe, expect, it } from 'vitest';
import {
  ConcurrencySchema,
  PipelinePolicySchema,
  QueueLimitsSchema,
  SwitchboardError,
  parseOrThrow,
} from '../../src/index.js';

describe('PipelinePolicySchema', () => {
  describe('when only the id is given', () => {
    it('applies the defaults of docs/design.md §2, in milliseconds', () => {
      expect(PipelinePolicySchema.parse({ id: 'p' })).toEqual({
        id: 'p',
        timeoutMs: 120_000,
        maxConcurrency: Number.POSITIVE_INFINITY,
        aggregation: { enabled: false, delayMs: 1500, maxWaitMs: 7500, maxMessages: 10 },
        busyMode: 'queue',
        retry: { maxAttempts: 10, baseDelayMs: 5000, maxDelayMs: 300_000 },
        deadLetterReply: undefined,
      });
    });
  });

  describe('when the delay is set', () => {
    it('defaults max_wait to 5 × delay and accepts human durations and numeric strings', () => {
      const policy = PipelinePolicySchema.parse({
        id: 'p',
        aggregation: { delay: '2s', max_messages: '4' },
        timeout: '1500ms',
      });
      expect(policy.aggregation).toMatchObject({ delayMs: 2000, maxWaitMs: 10_000, maxMessages: 4 });
      expect(policy.timeoutMs).toBe(1500);
    });
  });

  describe('when values are out of range or of the wrong kind', () => {
    it('throws one error naming every bad field', () => {
      const bad = {
        id: 'has space',
        aggregation: { delay: '20s', max_wait: '1h', max_messages: 0, colour: 'red' },
        busy_mode: 'drop',
        retry: { base_delay: '5 parsecs' },
      };
      let error: unknown;
      try {
        parseOrThrow(PipelinePolicySchema, bad, 'SB_CONFIG_INVALID', 'invalid pipeline');
      } catch (caught) {
        error = caught;
      }
      expect(error).toBeInstanceOf(SwitchboardError);
      const problems = (error as SwitchboardError).details?.problems as string[];
      expect(problems.join('\n')).toMatch(/^id: /m);
      expect(problems.join('\n')).toMatch(/^aggregation\.delay: must be between 100ms and 10s/m);
      expect(problems.join('\n')).toMatch(/^aggregation\.max_wait: must be at most 5m, got "1h"$/m);
      expect(problems.join('\n')).toMatch(/^aggregation\.max_messages: /m);
      expect(problems.join('\n')).toMatch(/^aggregation: .*colour/m);
      expect(problems.join('\n')).toMatch(/^busy_mode: /m);
      expect(problems.join('\n')).toMatch(/^retry\.base_delay: invalid duration "5 parsecs"/m);
    });

    it.each([0, '0s', '500ms'])('refuses a timeout of %j, naming the allowed range', (timeout) => {
      expect(() =>
        parseOrThrow(PipelinePolicySchema, { id: 'p', timeout }, 'SB_CONFIG_INVALID', 'invalid pipeline'),
      ).toThrow(
        expect.objectContaining({
          code: 'SB_CONFIG_INVALID',
          details: { problems: [`timeout: must be between 1s and 1h, got ${JSON.stringify(timeout)}`] },
        }),
      );
    });
  });
});

describe('ConcurrencySchema and QueueLimitsSchema', () => {
  it('default to 20 global / 1 per session and 10000 / 500 pending', () => {
    expect(ConcurrencySchema.parse({})).toEqual({ global: 20, perSession: 1 });
    expect(QueueLimitsSchema.parse({})).toEqual({ maxPending: 10_000, maxPendingPerSession: 500 });
  });

  it('refuse a zero limit naming the field', () => {
    const result = ConcurrencySchema.safeParse({ pipeline: 0 });
    expect(result.success).toBe(false);
    expect(result.error?.issues[0]?.path).toEqual(['pipeline']);
  });
});
