import { describe, expect, it } from 'vitest';
import { createPostedTexts } from '../../src/outbound/posted-texts.js';

const part = (index: number, text = 'hello') => ({ answering: 'turn-1', index, text });

describe('posted texts', () => {
  it('knows a text by its turn, place and wording', () => {
    const posted = createPostedTexts({ maxAgeMs: 60_000 });
    posted.add(part(0));
    expect(posted.has(part(0))).toBe(true);
    expect(posted.has(part(1))).toBe(false);
    expect(posted.has(part(0, 'other'))).toBe(false);
    expect(posted.has({ ...part(0), answering: 'turn-2' })).toBe(false);
  });

  it('forgets a text once max_age has passed', () => {
    let nowMs = 0;
    const posted = createPostedTexts({ maxAgeMs: 1_000, now: () => nowMs });
    posted.add(part(0));
    nowMs = 999;
    expect(posted.has(part(0))).toBe(true);
    nowMs = 1_000;
    expect(posted.has(part(0))).toBe(false);
  });

  it('forgets the oldest texts past maxEntries', () => {
    const posted = createPostedTexts({ maxAgeMs: 60_000, maxEntries: 2 });
    posted.add(part(0));
    posted.add(part(1));
    posted.add(part(2));
    expect([0, 1, 2].map((index) => posted.has(part(index)))).toEqual([false, true, true]);
  });
});
