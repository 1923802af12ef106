import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterEach, describe, expect, it } from 'vitest';
import { createSqliteStore } from '../src/index.js';

const folders: string[] = [];
afterEach(() => {
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});

setFlagsFromString('--expose_gc');
const gc = runInNewContext('gc') as () => void;

describe('review: the history cache of the SQLite store', () => {
  it('keeps memory bounded however many new sessions read their (empty) history', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'switchboard-review-'));
    folders.push(folder);
    const store = createSqliteStore({ path: join(folder, 'switchboard.db') });
    try {
      // Warm up statement caches before measuring.
      for (let i = 0; i < 1000; i += 1) await store.history.recent(`warm-${i}`, 'assistant', 20);
      gc();
      const before = process.memoryUsage().heapUsed;
      // Each new session's first turn reads its history: none, 0 characters of content kept.
      for (let i = 0; i < 300_000; i += 1)
        await store.history.recent(`session-${i}-${'x'.repeat(20)}`, 'assistant', 20);
      gc();
      const grown = process.memoryUsage().heapUsed - before;
      // The cap is 4 Mi characters of content; nothing here has any content.
      expect(grown).toBeLessThan(16 * 1024 * 1024);
    } finally {
      store.close();
    }
  }, 120_000);
});
