import { describe, expect, it } from 'vitest';
import { AuditFiltersSchema } from '../../src/admin/audit-filters.js';
import { auditQueryOf } from '../../src/commands/audit.js';
import { parseTimeBound } from '../../src/admin/time-bound.js';

const NOW = Date.UTC(2026, 10, 29, 12);

describe('parseTimeBound', () => {
  it('reads a duration as that long ago and an ISO date as itself', () => {
    expect(parseTimeBound('1h', NOW)).toBe(NOW - 3_600_000);
    expect(parseTimeBound('90s', NOW)).toBe(NOW - 90_000);
    expect(parseTimeBound('2026-11-01T00:00:00Z', NOW)).toBe(Date.UTC(2026, 10, 1));
    expect(parseTimeBound('last tuesday', NOW)).toBeNull();
  });
});

describe('audit filters', () => {
  describe('when the filters are valid', () => {
    it('give an audit query with numbers for the bounds and the limit', () => {
      const query = AuditFiltersSchema.parse({
        outcome: 'discarded',
        since: '2026-11-01T00:00:00Z',
        limit: '10',
      });
      expect(query).toEqual({ outcome: 'discarded', since: Date.UTC(2026, 10, 1), limit: 10 });
      expect(AuditFiltersSchema.parse({})).toEqual({ limit: 50 });
    });
  });

  describe('when the CLI flags are wrong', () => {
    it('names every wrong flag at once', () => {
      let message = '';
      try {
        auditQueryOf({ outcome: 'exploded', since: 'soon', limit: '0', json: false });
      } catch (error) {
        message = (error as Error).message;
      }
      expect(message.split('\n')).toEqual([
        expect.stringMatching(/^--outcome: expected one of completed\|discarded\|/),
        '--since: expected a duration like 1h or an ISO date, got "soon"',
        '--limit: expected 1..1000',
      ]);
    });
  });
});
