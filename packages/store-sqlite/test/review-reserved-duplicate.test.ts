import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { deliveryFixture } from '@switchboard/contracts';
import { describe, expect, it } from 'vitest';
import { createSqliteStore } from '../src/index.js';

describe('review: sqlite outbox, the same delivery id added while it is reserved', () => {
  it('is a duplicate, as it is while stored', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'switchboard-review-'));
    const store = createSqliteStore({ path: join(folder, 'switchboard.db') });
    try {
      const delivery = deliveryFixture(1, { createdAt: Date.now(), rememberForMs: 60_000 });
      const reserved = store.outbox.reserve?.(delivery, Date.now());
      if (reserved === undefined || reserved === null || reserved === 'duplicate') throw new Error('not reserved');
      expect(await store.outbox.add({ ...delivery })).toBe('duplicate');
    } finally {
      store.close();
      rmSync(folder, { recursive: true, force: true });
    }
  });
});
