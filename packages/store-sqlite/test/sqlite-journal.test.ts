import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { queuedMessageFixture } from '@switchboard/contracts';
import { afterEach, describe, expect, it } from 'vitest';
import { createGroupCommit } from '../src/group-commit.js';
import { migrate } from '../src/migrations.js';
import { createSqliteJournal } from '../src/sqlite-journal.js';
import { openDatabase } from '../src/sqlite-store.js';

const folders: string[] = [];
afterEach(() => {
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});

/** A journal over a new, migrated database file. */
function openJournal() {
  const folder = mkdtempSync(join(tmpdir(), 'switchboard-journal-'));
  folders.push(folder);
  const path = join(folder, 'switchboard.db');
  const db = openDatabase(path, 5000, false);
  migrate(db, path);
  return { db, journal: createSqliteJournal(db, createGroupCommit(db), Date.now) };
}

describe('SQLite journal', () => {
  describe('when a removal fails on its own', () => {
    it('forgets its bookkeeping and lets later turn starts update the rows it left', async () => {
      const { db, journal } = openJournal();
      const queued = queuedMessageFixture(1);
      await journal.append(queued);
      db.exec(
        `CREATE TRIGGER keep_journal BEFORE DELETE ON journal BEGIN SELECT RAISE(ABORT, 'disk says no'); END`,
      );

      for (let removal = 0; removal < 3; removal++) {
        await expect(journal.remove([queued.message.id])).rejects.toThrow('disk says no');
      }
      expect(journal.pendingRemovals).toBe(0);
      await journal.markStarted([queued.message.id], 1);
      expect((await journal.load()).map((entry) => entry.attempt)).toEqual([1]);
      db.close();
    });
  });
});
