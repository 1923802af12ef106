import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ERROR_CODES } from '../../src/index.js';

const doc = readFileSync(new URL('../../../../docs/errors.md', import.meta.url), 'utf8');

describe('docs/errors.md', () => {
  it('documents every error code with its HTTP status, and nothing else', () => {
    const rows = [...doc.matchAll(/^\| `(SB_[A-Z_]+)` \| (\d{3}|—) \|/gm)].map(([, code, status]) => [
      code,
      status,
    ]);
    expect(rows.map(([code]) => code).sort()).toEqual(Object.keys(ERROR_CODES).sort());
    for (const [code, status] of rows) {
      const { status: expected } = ERROR_CODES[code as keyof typeof ERROR_CODES];

      // Only the CLI's own usage errors never reach HTTP; the table shows — for them.
      if (status !== '—') expect(Number(status)).toBe(expected);
    }
  });
});
