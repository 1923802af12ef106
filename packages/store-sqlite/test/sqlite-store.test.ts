import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { StoreFactory } from '@switchboard/contracts';
import {
  auditLogContract,
  auditRecordFixture,
  deliveryFixture,
  handoffStoreContract,
  historyStoreContract,
  journalContract,
  messageStatusStoreContract,
  queryPoolContract,
  queuedMessageFixture,
  replyOutboxContract,
} from '@switchboard/contracts';
import {
  type Delivery,
  type DeliveryClaim,
  type QueuedMessage,
  createMemoryQueryPool,
} from '@switchboard/core';
import BetterSqlite3 from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { createSqliteStore, SCHEMA_VERSION, type SqliteStore } from '../src/index.js';
import { MIGRATIONS } from '../src/migrations.js';

/** A new file at schema `version`, built by the migration files up to it. */
function databaseAtVersion(path: string, version: number): BetterSqlite3.Database {
  const db = new BetterSqlite3(path);
  for (const file of MIGRATIONS.slice(0, version)) {
    db.exec(readFileSync(new URL(`../migrations/${file}`, import.meta.url), 'utf8'));
  }
  db.pragma(`user_version = ${version}`);
  return db;
}

/** Writes `deliveries` into an older file's outbox as that schema's store would have. */
function insertIntoOutbox(db: BetterSqlite3.Database, deliveries: readonly Delivery[]): void {
  const insert = db.prepare(
    'INSERT INTO outbox (id, channel, chat, attempts, not_before, payload) VALUES (?, ?, ?, ?, ?, ?)',
  );
  for (const row of deliveries) {
    insert.run(row.id, row.channel, row.chat, row.attempts, row.notBefore, JSON.stringify(row));
  }
}

const temporaryFolders: string[] = [];

/** A database path inside a new temporary folder, deleted after the test. */
function temporaryPath(name = 'switchboard.db'): string {
  const folder = mkdtempSync(join(tmpdir(), 'switchboard-sqlite-'));
  temporaryFolders.push(folder);
  return join(folder, name);
}

afterEach(() => {
  for (const folder of temporaryFolders.splice(0)) rmSync(folder, { recursive: true, force: true });
});

/** A contract factory for one port of a store over a fresh file; `reopen` reopens that file. */
function sqliteFactory<Store>(pick: (store: SqliteStore) => Store): StoreFactory<Store> {
  return async ({ now }) => {
    const path = temporaryPath();
    let sqlite = createSqliteStore({ path, now });
    return {
      store: pick(sqlite),
      close: async () => sqlite.close(),
      reopen: async () => {
        sqlite.close();
        sqlite = createSqliteStore({ path, now });
        return pick(sqlite);
      },
    };
  };
}

journalContract(
  'sqlite',
  sqliteFactory((store) => store.journal),
);
auditLogContract(
  'sqlite',
  sqliteFactory((store) => store.auditLog),
);
messageStatusStoreContract(
  'sqlite',
  sqliteFactory((store) => store.statuses),
);
replyOutboxContract(
  'sqlite',
  sqliteFactory((store) => store.outbox),
);
historyStoreContract(
  'sqlite',
  sqliteFactory((store) => store.history),
);
handoffStoreContract(
  'sqlite',
  sqliteFactory((store) => store.handoffs),
);
queryPoolContract(
  'memory query pool with a SQLite journal',
  async ({ now, concurrency, limits, pipelines, tenants }) => {
    const sqlite = createSqliteStore({ path: temporaryPath(), now });
    return {
      store: createMemoryQueryPool({ now, concurrency, limits, pipelines, tenants, journal: sqlite.journal }),
      close: async () => sqlite.close(),
    };
  },
);

/** Reads from the file with a connection of its own, as another process would. */
function inspect<T>(path: string, read: (db: BetterSqlite3.Database) => T): T {
  const db = new BetterSqlite3(path, { readonly: true });
  try {
    return read(db);
  } finally {
    db.close();
  }
}

/** The rows `sql` reads from the file at `path`. */
function rowsIn(path: string, sql: string): unknown[] {
  return inspect(path, (db) => db.prepare(sql).all());
}

/** `outbox_ended` keyed by id (0009), with the index expired rows are deleted through. */
function expectOutboxEndedById(path: string): void {
  expect(rowsIn(path, "SELECT sql FROM sqlite_master WHERE name = 'outbox_ended'")).toEqual([
    { sql: expect.stringMatching(/WITHOUT ROWID$/) },
  ]);
  expect(rowsIn(path, "SELECT name FROM sqlite_master WHERE name = 'outbox_ended_expiry'")).toEqual([
    { name: 'outbox_ended_expiry' },
  ]);
}

describe('createSqliteStore', () => {
  describe('when the file does not exist yet', () => {
    it('creates missing parent folders and a WAL-mode database at the current schema version', () => {
      const path = join(temporaryPath('unused'), '..', 'nested', 'deeper', 'switchboard.db');
      createSqliteStore({ path }).close();
      expect(inspect(path, (db) => db.pragma('user_version', { simple: true }))).toBe(SCHEMA_VERSION);
      expect(inspect(path, (db) => db.pragma('journal_mode', { simple: true }))).toBe('wal');
    });

    it('makes the folders it creates 0700 and the database and its WAL 0600, whatever the umask lets', () => {
      const nested = join(temporaryPath('unused'), '..', 'private');
      const path = join(nested, 'switchboard.db');
      // The usual umask: SQLite alone would create the files 0644, readable by every user.
      const umask = process.umask(0o022);
      try {
        const store = createSqliteStore({ path });
        try {
          expect(statSync(nested).mode & 0o777).toBe(0o700);
          expect(statSync(path).mode & 0o777).toBe(0o600);
          expect(statSync(`${path}-wal`).mode & 0o777).toBe(0o600);
        } finally {
          store.close();
        }
      } finally {
        process.umask(umask);
      }
    });
  });

  describe('when the file is opened again', () => {
    it('applies no migration twice and keeps the data', async () => {
      const path = temporaryPath();
      const first = createSqliteStore({ path });
      await first.journal.append(queuedMessageFixture(1));
      first.close();
      const second = createSqliteStore({ path });
      expect(await second.journal.load()).toEqual([queuedMessageFixture(1)]);
      second.close();
      expect(inspect(path, (db) => db.pragma('user_version', { simple: true }))).toBe(SCHEMA_VERSION);
    });
  });

  describe('when the file was written at schema version 1', () => {
    it('migrates it, keeping its journal, and then records retry times', async () => {
      const path = temporaryPath();
      const db = new BetterSqlite3(path);
      db.exec(readFileSync(new URL('../migrations/0001_init.sql', import.meta.url), 'utf8'));
      db.pragma('user_version = 1');
      const old = queuedMessageFixture(1, { attempt: 2 });
      db.prepare('INSERT INTO journal (id, attempt, payload) VALUES (?, ?, ?)').run(
        old.message.id,
        2,
        JSON.stringify(old),
      );
      db.close();
      const store = createSqliteStore({ path });
      expect(await store.journal.load()).toEqual([old]);
      await store.journal.markRetry([old.message.id], 9_000);
      expect(await store.journal.load()).toEqual([{ ...old, retryAtMs: 9_000 }]);
      store.close();
      expect(inspect(path, (inspected) => inspected.pragma('user_version', { simple: true }))).toBe(
        SCHEMA_VERSION,
      );
    });
  });

  describe('when the file was written at schema version 5 with deliveries in the outbox', () => {
    it('migrates it and claims the head of each chat, oldest first, once it is due', async () => {
      const path = temporaryPath();
      const db = databaseAtVersion(path, 5);
      const waiting = deliveryFixture(1, { chat: 'a', attempts: 1, notBefore: 5_000 });
      const rows = [waiting, deliveryFixture(2, { chat: 'b' }), deliveryFixture(3, { chat: 'a' })];
      insertIntoOutbox(db, [...rows, deliveryFixture(4, { chat: 'b' })]);
      db.close();
      const store = createSqliteStore({ path });
      try {
        const first = await store.outbox.claim('tg', 1_000);
        expect(first?.delivery.id).toBe(deliveryFixture(2).id);
        expect(await store.outbox.claim('tg', 1_000)).toBeNull();
        expect((await store.outbox.claim('tg', 5_000))?.delivery).toEqual(waiting);
        await store.outbox.delivered(first as DeliveryClaim);
        expect((await store.outbox.claim('tg', 5_000))?.delivery.id).toBe(deliveryFixture(4).id);
      } finally {
        store.close();
      }
    });
  });

  describe('when a database of schema version 6 remembers ended deliveries', () => {
    it('keeps remembering them after the migration: adding one again answers duplicate until it expires', async () => {
      const path = temporaryPath();
      const db = databaseAtVersion(path, 6);
      const remembered = deliveryFixture(1);
      const expired = deliveryFixture(2);
      const insert = db.prepare('INSERT INTO outbox_ended (id, expires_at) VALUES (?, ?)');
      insert.run(remembered.id, Date.now() + 60_000);
      insert.run(expired.id, Date.now() - 1);
      db.close();
      const store = createSqliteStore({ path });
      try {
        expect(await store.outbox.add(remembered)).toBe('duplicate');
        expect(await store.outbox.add(expired)).toBe('added');
      } finally {
        store.close();
      }
      expect(rowsIn(path, "SELECT name FROM sqlite_master WHERE name LIKE 'outbox_head%'")).toEqual([]);
      expectOutboxEndedById(path);
    });
  });

  describe('when a database of schema version 7 holds journal and outbox rows', () => {
    it('keeps each table whole and in its order, rows added afterwards come last, and no commit writes sqlite_sequence for them', async () => {
      const path = temporaryPath();
      const db = databaseAtVersion(path, 7);
      const journaled = [queuedMessageFixture(1), queuedMessageFixture(2, { attempt: 2 })];
      const toJournal = db.prepare(
        'INSERT INTO journal (id, attempt, retry_at, payload) VALUES (?, ?, ?, ?)',
      );
      toJournal.run(journaled[0]?.message.id, 1, null, JSON.stringify(journaled[0]));
      toJournal.run(journaled[1]?.message.id, 2, 9_000, JSON.stringify(journaled[1]));
      const queuedReplies = [deliveryFixture(1, { chat: 'a' }), deliveryFixture(2, { chat: 'a' })];
      insertIntoOutbox(db, queuedReplies);
      db.close();

      const store = createSqliteStore({ path });
      try {
        const added = queuedMessageFixture(3);
        await store.journal.append(added);
        const loaded = await store.journal.load();
        expect(loaded.map((queued) => queued.message.id)).toEqual(
          [...journaled, added].map((queued) => queued.message.id),
        );
        expect(loaded[1]).toMatchObject({ attempt: 2, retryAtMs: 9_000 });
        // Appended again (a replay), the oldest row goes behind the newest.
        expect(await store.journal.append(journaled[0] as QueuedMessage)).toBe('appended');
        expect((await store.journal.load()).map((queued) => queued.message.id)).toEqual(
          [journaled[1], added, journaled[0]].map((queued) => queued?.message.id),
        );
        const first = await store.outbox.claim('tg', 10_000);
        expect(first?.delivery.id).toBe(queuedReplies[0]?.id);
        await store.outbox.delivered(first as DeliveryClaim);
        expect((await store.outbox.claim('tg', 10_000))?.delivery.id).toBe(queuedReplies[1]?.id);
        expect(await store.outbox.add(deliveryFixture(3, { chat: 'b' }))).toBe('added');
      } finally {
        store.close();
      }
      const schema = rowsIn(
        path,
        "SELECT name, sql FROM sqlite_master WHERE tbl_name IN ('journal', 'outbox') ORDER BY name",
      ) as { name: string; sql: string | null }[];
      expect(schema.map((entry) => entry.name)).toEqual([
        'journal',
        'outbox',
        'outbox_chat',
        'sqlite_autoindex_journal_1',
        'sqlite_autoindex_outbox_1',
      ]);
      for (const { sql } of schema) expect(sql ?? '').not.toContain('AUTOINCREMENT');
      expect(rowsIn(path, "SELECT name FROM sqlite_sequence WHERE name IN ('journal', 'outbox')")).toEqual(
        [],
      );
    });
  });

  describe('when a claimed head was added by this store', () => {
    it('hands it out as added without reading its row, while the heads kept so hold at most 4 Mi characters of payload', async () => {
      const path = temporaryPath();
      const store = createSqliteStore({ path });
      try {
        // 100 kB answers: the first ~41 fit in 4 Mi characters, the rest are read from the file at their claim.
        const deliveries = Array.from({ length: 50 }, (_, index) =>
          deliveryFixture(index + 1, { chat: `c${index}`, replies: [{ text: 'x'.repeat(100_000) }] }),
        );
        let kept = 0;
        let payload = 0;
        for (const delivery of deliveries) {
          await store.outbox.add(delivery);
          payload += JSON.stringify(delivery).length;
          if (payload <= 4 * 1024 * 1024) kept += 1;
        }
        expect(kept).toBeGreaterThan(30);
        expect(kept).toBeLessThan(50);
        // Rows no claim can parse: only a claim that reads one fails.
        const other = new BetterSqlite3(path);
        other.prepare("UPDATE outbox SET payload = '{ not json'").run();
        other.close();
        for (const delivery of deliveries.slice(0, kept)) {
          expect((await store.outbox.claim('tg', 10_000))?.delivery).toEqual(delivery);
        }
        await expect(store.outbox.claim('tg', 10_000)).rejects.toThrow();
      } finally {
        store.close();
      }
    });
  });

  describe("when a claim cannot read its chat's head", () => {
    it('throws and leaves the chat claimable: the next claim after the row reads well hands it out', async () => {
      const path = temporaryPath();
      const delivery = deliveryFixture(1, { chat: 'a' });
      // Added by another store object: this one reads the head's row at its claim.
      const adding = createSqliteStore({ path });
      await adding.outbox.add(delivery);
      adding.close();
      const store = createSqliteStore({ path });
      try {
        const other = new BetterSqlite3(path);
        const payload = (
          other.prepare('SELECT payload FROM outbox WHERE id = ?').get(delivery.id) as { payload: string }
        ).payload;
        other.prepare('UPDATE outbox SET payload = ? WHERE id = ?').run('{ not json', delivery.id);
        await expect(store.outbox.claim('tg', 10_000)).rejects.toThrow();
        other.prepare('UPDATE outbox SET payload = ? WHERE id = ?').run(payload, delivery.id);
        other.close();

        expect((await store.outbox.claim('tg', 10_000))?.delivery.id).toBe(delivery.id);
      } finally {
        store.close();
      }
    });
  });

  describe('when the schema is newer than this build', () => {
    it('refuses to open it with SB_STORE_FORMAT_UNSUPPORTED naming store.path and both versions, changing nothing', () => {
      const path = temporaryPath();
      createSqliteStore({ path }).close();
      const db = new BetterSqlite3(path);
      db.pragma(`user_version = ${SCHEMA_VERSION + 1}`);
      db.close();
      expect(() => createSqliteStore({ path })).toThrow(
        expect.objectContaining({
          code: 'SB_STORE_FORMAT_UNSUPPORTED',
          message: `store.path: ${path} has schema version ${SCHEMA_VERSION + 1}, this build reads version ${SCHEMA_VERSION}; upgrade Switchboard`,
          details: { store: 'sqlite', path, found: SCHEMA_VERSION + 1, reads: SCHEMA_VERSION },
        }),
      );
      expect(inspect(path, (db) => db.pragma('user_version', { simple: true }))).toBe(SCHEMA_VERSION + 1);
    });
  });

  describe('when the path cannot be opened', () => {
    it('throws SB_STORE_UNAVAILABLE naming the path', () => {
      const blocker = temporaryPath('a-file');
      writeFileSync(blocker, 'not a folder');
      expect(() => createSqliteStore({ path: join(blocker, 'switchboard.db') })).toThrow(
        expect.objectContaining({
          code: 'SB_STORE_UNAVAILABLE',
          details: { path: join(blocker, 'switchboard.db') },
        }),
      );
    });
  });

  describe('when a process stops without closing the store', () => {
    it('leaves every committed journal entry to the next open', async () => {
      const path = temporaryPath();
      // Never closed: the handle is simply dropped, as a killed process would leave it.
      const crashed = createSqliteStore({ path });
      for (const index of [1, 2, 3]) await crashed.journal.append(queuedMessageFixture(index));
      await crashed.journal.markStarted([queuedMessageFixture(2).message.id], 1);
      const restarted = createSqliteStore({ path });
      expect(await restarted.journal.load()).toEqual([
        queuedMessageFixture(1),
        queuedMessageFixture(2, { attempt: 1 }),
        queuedMessageFixture(3),
      ]);
      restarted.close();
      crashed.close();
    });
  });

  describe('when a journal write fails after its delivery key was marked', () => {
    it('rolls the mark back with it, so the redelivery is journaled', async () => {
      const path = temporaryPath();
      const store = createSqliteStore({ path });
      const delivery = { key: 'telegram:tg:7', ttlMs: 60_000 };
      // A NULL attempt breaks the journal's NOT NULL constraint after the key was marked.
      const broken = { ...queuedMessageFixture(1), attempt: null as unknown as number };
      await expect(store.journal.append(broken, delivery)).rejects.toThrow(/NOT NULL/);
      expect(await store.journal.append(queuedMessageFixture(1), delivery)).toBe('appended');
      expect(await store.journal.load()).toEqual([queuedMessageFixture(1)]);
      store.close();
    });
  });

  describe('when delivery keys expire', () => {
    it('deletes expired rows while it keeps writing', async () => {
      const path = temporaryPath();
      let nowMs = 0;
      const store = createSqliteStore({ path, now: () => nowMs });
      const append = (key: string, ttlMs: number, index: number) =>
        store.journal.append(queuedMessageFixture(index), { key, ttlMs });
      for (let index = 0; index < 500; index += 1) await append(`old-${index}`, 1000, index);
      nowMs = 1000;
      for (let index = 0; index < 500; index += 1) await append(`new-${index}`, 60_000, index);
      const rows = inspect(
        path,
        (db) => db.prepare('SELECT count(*) AS n FROM dedup').get() as { n: number },
      );
      store.close();
      expect(rows.n).toBe(500);
    });
  });

  describe('when a dead letter was written before payloads said whether they are replayable', () => {
    it('reads it as replayable: it kept the whole message', async () => {
      const path = temporaryPath();
      const store = createSqliteStore({ path });
      const record = auditRecordFixture(1, { outcome: 'dead_lettered', payload: null });
      await store.auditLog.append(record);
      const db = new BetterSqlite3(path);
      db.prepare('UPDATE audit SET payload = ? WHERE id = ?').run(
        JSON.stringify(queuedMessageFixture(1)),
        record.id,
      );
      db.close();
      expect((await store.auditLog.getDeadLetter(record.id))?.payload).toEqual({
        ...queuedMessageFixture(1),
        replayable: true,
      });
      store.close();
    });
  });

  describe('when an idempotency key is claimed', () => {
    it('binds it with the group commit: another connection sees the binding once the claim resolves, not before', async () => {
      const path = temporaryPath();
      const store = createSqliteStore({ path });
      const reader = new BetterSqlite3(path, { readonly: true });
      const boundTo = reader.prepare("SELECT message_id FROM idempotency_key WHERE key = 'k'").pluck();
      try {
        const claimed = store.statuses.claimIdempotencyKey({
          channel: 'api',
          credential: 'loopback',
          key: 'k',
          fingerprint: 'f',
          messageId: 'm1',
          ttlMs: 60_000,
        });
        expect(boundTo.get()).toBeUndefined();
        expect(await claimed).toBeNull();
        expect(boundTo.get()).toBe('m1');
      } finally {
        reader.close();
        store.close();
      }
    });
  });

  describe('when history is appended', () => {
    it('writes it with the group commit: another connection sees it once the append resolves, not before', async () => {
      const path = temporaryPath();
      const store = createSqliteStore({ path });
      const reader = new BetterSqlite3(path, { readonly: true });
      const count = reader.prepare('SELECT count(*) FROM history').pluck();
      try {
        const appended = store.history.append('s', 'p', [{ role: 'user', content: 'hello' }]);
        expect(count.get()).toBe(0);
        await appended;
        expect(count.get()).toBe(1);
      } finally {
        reader.close();
        store.close();
      }
    });
  });

  describe('when a conversation grows past historyMaxEntries', () => {
    it('keeps only the newest rows in the file', async () => {
      const path = temporaryPath();
      const store = createSqliteStore({ path, historyMaxEntries: 3 });
      for (const content of ['a', 'b', 'c', 'd', 'e']) {
        await store.history.append('s', 'p', [{ role: 'user', content }]);
      }
      await store.history.append('other', 'p', [{ role: 'user', content: 'x' }]);
      const rows = inspect(path, (db) =>
        db.prepare('SELECT content FROM history ORDER BY seq').pluck().all(),
      );
      store.close();
      expect(rows).toEqual(['c', 'd', 'e', 'x']);
    });

    it('trims a conversation it knows only once an append takes it past the cap', async () => {
      const store = createSqliteStore({ path: temporaryPath(), historyMaxEntries: 3 });
      const statementsOf = async (content: string) => {
        const before = store.counts.statements;
        await store.history.append('s', 'p', [{ role: 'user', content }]);
        return store.counts.statements - before;
      };
      try {
        // The first append trims and counts the conversation; the next ones under the cap insert.
        expect(await statementsOf('a')).toBe(3);
        expect(await statementsOf('b')).toBe(1);
        expect(await statementsOf('c')).toBe(1);
        // Past the cap: the insert and the trim.
        expect(await statementsOf('d')).toBe(2);
        expect(await store.history.recent('s', 'p', 10)).toEqual(
          ['b', 'c', 'd'].map((content) => ({ role: 'user', content })),
        );
      } finally {
        store.close();
      }
    });

    it('trims a conversation a reopened store finds at the cap on its next append', async () => {
      const path = temporaryPath();
      const first = createSqliteStore({ path, historyMaxEntries: 3 });
      for (const content of ['a', 'b', 'c'])
        await first.history.append('s', 'p', [{ role: 'user', content }]);
      first.close();
      const store = createSqliteStore({ path, historyMaxEntries: 3 });
      try {
        await store.history.append('s', 'p', [{ role: 'user', content: 'd' }]);
        await store.history.append('s', 'p', [{ role: 'user', content: 'e' }]);
        expect(await store.history.recent('s', 'p', 10)).toEqual(
          ['c', 'd', 'e'].map((content) => ({ role: 'user', content })),
        );
      } finally {
        store.close();
      }
    });
  });
  describe('when a session reads its history after appending to it', () => {
    const turn = (index: number) => [
      { role: 'user' as const, content: `q${index}` },
      { role: 'assistant' as const, content: `a${index}` },
    ];

    it('reads it from memory, as the file holds it, the cap applied', async () => {
      const path = temporaryPath();
      const store = createSqliteStore({ path, historyMaxEntries: 5 });
      const read = async (limit: number) => {
        const before = store.counts.statements;
        const entries = await store.history.recent('s', 'p', limit);
        return { entries, statements: store.counts.statements - before };
      };
      try {
        await store.history.append('s', 'p', turn(1));
        // The first read goes to the file and keeps what it read.
        expect(await read(4)).toEqual({ entries: turn(1), statements: 1 });
        for (const index of [2, 3, 4]) await store.history.append('s', 'p', turn(index));
        const file = inspect(path, (db) =>
          db.prepare('SELECT role, content FROM history ORDER BY seq').all(),
        );
        expect(file).toHaveLength(5);
        expect(await read(4)).toEqual({ entries: (file as unknown[]).slice(1), statements: 0 });
        expect(await read(2)).toEqual({ entries: turn(4), statements: 0 });
        // More than it kept: read from the file.
        expect(await read(6)).toEqual({ entries: file, statements: 1 });
      } finally {
        store.close();
      }
    });

    it('reads the file again once an append failed', async () => {
      const path = temporaryPath();
      const store = createSqliteStore({ path });
      try {
        await store.history.append('s', 'p', turn(1));
        await store.history.recent('s', 'p', 4);
        const other = new BetterSqlite3(path);
        other.exec(
          "CREATE TRIGGER history_full BEFORE INSERT ON history BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END",
        );
        await expect(store.history.append('s', 'p', turn(2))).rejects.toThrow('disk is full');
        other.exec('DROP TRIGGER history_full');
        other.close();
        const before = store.counts.statements;
        expect(await store.history.recent('s', 'p', 4)).toEqual(turn(1));
        expect(store.counts.statements - before).toBe(1);
      } finally {
        store.close();
      }
    });
  });
});
