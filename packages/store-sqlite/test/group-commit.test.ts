import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { createGroupCommit } from '../src/group-commit.js';

function database() {
  const path = join(mkdtempSync(join(tmpdir(), 'group-commit-')), 'db.sqlite');
  const db = new BetterSqlite3(path);
  db.pragma('journal_mode = WAL');
  db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL)');
  return { db, path };
}

describe('group commit', () => {
  describe('when several writes are issued in one turn of the event loop', () => {
    it('commits them in one transaction, visible to another connection once each promise resolves', async () => {
      const { db, path } = database();
      const commit = createGroupCommit(db);
      const insert = db.prepare('INSERT INTO t (id, v) VALUES (?, ?)');
      const writes = [1, 2, 3].map((id) => commit(() => insert.run(id, `v${id}`)));
      const reader = new BetterSqlite3(path, { readonly: true });
      expect(reader.prepare('SELECT count(*) AS n FROM t').get()).toEqual({ n: 0 });
      await Promise.all(writes);
      expect(reader.prepare('SELECT count(*) AS n FROM t').get()).toEqual({ n: 3 });
      reader.close();
      db.close();
    });
  });

  describe('when one write of a batch fails', () => {
    it('rejects that write only and commits the others', async () => {
      const { db } = database();
      const commit = createGroupCommit(db);
      const insert = db.prepare('INSERT INTO t (id, v) VALUES (?, ?)');
      const results = await Promise.allSettled([
        commit(() => insert.run(1, 'a')),
        commit(() => insert.run(1, 'duplicate id')),
        commit(() => insert.run(2, 'b')),
      ]);
      expect(results.map((result) => result.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
      expect(db.prepare('SELECT id, v FROM t ORDER BY id').all()).toEqual([
        { id: 1, v: 'a' },
        { id: 2, v: 'b' },
      ]);
      db.close();
    });
  });

  describe('when flushed before closing', () => {
    it('commits what is pending at once', () => {
      const { db } = database();
      const commit = createGroupCommit(db);
      void commit(() => db.prepare('INSERT INTO t (id, v) VALUES (1, ?)').run('x'));
      commit.flush();
      expect(db.prepare('SELECT count(*) AS n FROM t').get()).toEqual({ n: 1 });
      db.close();
    });
  });
  describe('when a write of a unit fails in a batch', () => {
    it('rejects the whole unit, commits none of its writes, and commits the writes outside it', async () => {
      const { db } = database();
      const commit = createGroupCommit(db);
      const insert = db.prepare('INSERT INTO t (id, v) VALUES (?, ?)');
      const writes: Promise<void>[] = [commit(() => insert.run(1, 'a'))];
      commit.unit(() => {
        writes.push(commit(() => insert.run(2, 'in the unit')));
        writes.push(commit(() => insert.run(1, 'duplicate id')));
      });
      writes.push(commit(() => insert.run(3, 'c')));
      const results = await Promise.allSettled(writes);
      expect(results.map((result) => result.status)).toEqual([
        'fulfilled',
        'rejected',
        'rejected',
        'fulfilled',
      ]);
      expect(db.prepare('SELECT id, v FROM t ORDER BY id').all()).toEqual([
        { id: 1, v: 'a' },
        { id: 3, v: 'c' },
      ]);
      db.close();
    });
  });

  describe('when the code issuing a unit throws', () => {
    it('rethrows, rejects the writes it issued with that error and commits none of them', async () => {
      const { db } = database();
      const commit = createGroupCommit(db);
      const insert = db.prepare('INSERT INTO t (id, v) VALUES (?, ?)');
      const thrown = new Error('a listener threw');
      const writes: Promise<void>[] = [];
      expect(() =>
        commit.unit(() => {
          writes.push(commit(() => insert.run(1, 'in the unit')));
          throw thrown;
        }),
      ).toThrow(thrown);
      const after = commit(() => insert.run(2, 'b'));
      await expect(writes[0]).rejects.toBe(thrown);
      await after;
      expect(db.prepare('SELECT id, v FROM t ORDER BY id').all()).toEqual([{ id: 2, v: 'b' }]);
      db.close();
    });
  });
});
