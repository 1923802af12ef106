import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { createGroupCommit } from '../src/group-commit.js';
import { countWrites } from '../src/write-counts.js';

function database() {
  const db = new BetterSqlite3(join(mkdtempSync(join(tmpdir(), 'write-counts-')), 'db.sqlite'));
  db.pragma('journal_mode = WAL');
  db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL)');
  return db;
}

describe('write counts', () => {
  describe('when writes share one group commit', () => {
    it('counts one commit and every statement run in it', async () => {
      const db = database();
      const counts = countWrites(db);
      const commit = createGroupCommit(db);
      const insert = db.prepare('INSERT INTO t (id, v) VALUES (?, ?)');
      const read = db.prepare('SELECT v FROM t WHERE id = ?');
      await Promise.all([1, 2, 3].map((id) => commit(() => insert.run(id, `v${id}`))));
      expect(read.get(2)).toEqual({ v: 'v2' });
      expect({ commits: counts.commits, statements: counts.statements }).toEqual({
        commits: 1,
        statements: 4,
      });
      db.close();
    });
  });

  describe('when a write runs outside a transaction, and a transaction fails', () => {
    it('counts the write as a commit of its own and the rolled-back transaction as none', () => {
      const db = database();
      const counts = countWrites(db);
      const insert = db.prepare('INSERT INTO t (id, v) VALUES (?, ?)');
      insert.run(1, 'a');
      const failing = db.transaction(() => {
        insert.run(2, 'b');
        insert.run(1, 'duplicate id');
      });
      expect(() => failing()).toThrow();
      db.transaction(() => insert.run(3, 'c')).immediate();
      expect({ commits: counts.commits, statements: counts.statements }).toEqual({
        commits: 2,
        statements: 4,
      });
      db.close();
    });
  });
});
