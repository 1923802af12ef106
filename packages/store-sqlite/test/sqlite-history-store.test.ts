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

describe('sqlite history store', () => {
  describe('when many new sessions read their (empty) history', () => {
    it('keeps the memory its kept histories take bounded', async () => {
      const folder = mkdtempSync(join(tmpdir(), 'switchboard-history-'));
      folders.push(folder);
      const store = createSqliteStore({ path: join(folder, 'switchboard.db') });
      try {
        // Warm up statement caches before measuring.
        for (let i = 0; i < 1000; i += 1) await store.history.recent(`warm-${i}`, 'assistant', 20);
        gc();
        const before = process.memoryUsage().heapUsed;
        // Each new session's first turn reads its history: none, yet each kept one costs memory.
        for (let i = 0; i < 300_000; i += 1)
          await store.history.recent(`session-${i}-${'x'.repeat(20)}`, 'assistant', 20);
        gc();
        const grown = process.memoryUsage().heapUsed - before;
        // At most 10,000 kept conversations (a few MB); unbounded, 300,000 take about 75 MB.
        expect(grown).toBeLessThan(16 * 1024 * 1024);
      } finally {
        store.close();
      }
    }, 120_000);
  });
});
