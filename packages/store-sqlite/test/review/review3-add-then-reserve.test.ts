import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { deliveryFixture } from '@switchboard/contracts';
import { afterEach, describe, expect, it } from 'vitest';
import { createSqliteStore } from '../../src/index.js';

const folders: string[] = [];
afterEach(() => {
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});

describe('review3: sqlite reserve while an add of the same id is still committing', () => {
  it('answers duplicate (the id is being stored), so the delivery is not sent twice', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'switchboard-outbox-'));
    folders.push(folder);
    const store = createSqliteStore({ path: join(folder, 'switchboard.db') });
    try {
      const delivery = deliveryFixture(1, { createdAt: Date.now(), rememberForMs: 60_000 });
      // First add: not awaited, its commit still in the group.
      const added = store.outbox.add({ ...delivery });
      const reserved = store.outbox.reserve?.({ ...delivery }, Date.now());
      expect(await added).toBe('added');
      // A claim here means the same id is sent now AND stays stored to be sent again.
      if (reserved !== null && reserved !== undefined && reserved !== 'duplicate') {
        await store.outbox.addEnded?.(reserved);
        const stillStored = (await store.outbox.list(delivery.channel)).map(({ id }) => id);
        expect({ reserved: 'claim', stillStored }).toEqual({ reserved: 'duplicate', stillStored: [] });
      }
      expect(reserved === null || reserved === 'duplicate').toBe(true);
    } finally {
      store.close();
    }
  });
});
