import { closeSync, mkdirSync, openSync } from 'node:fs';
import { dirname } from 'node:path';
import type {
  AuditLog,
  HandoffStore,
  HistoryStore,
  Journal,
  MessageStatusStore,
  ReplyOutbox,
} from '@switchboard/core';
import { SwitchboardError } from '@switchboard/core';
import BetterSqlite3, { type Database } from 'better-sqlite3';
import { migrate } from './migrations.js';
import { createSqliteAuditLog } from './sqlite-audit-log.js';
import { createSqliteHandoffStore } from './sqlite-handoff-store.js';
import { createSqliteHistoryStore } from './sqlite-history-store.js';
import { createGroupCommit } from './group-commit.js';
import { createSqliteJournal } from './sqlite-journal.js';
import { createSqliteMessageStatusStore } from './sqlite-message-status-store.js';
import { createSqliteReplyOutbox } from './sqlite-reply-outbox.js';
import { type WriteCounts, countWrites } from './write-counts.js';

/** Options of `createSqliteStore`. */
export interface SqliteStoreOptions {
  /**
   * The database file (`store.path`); missing parent folders are created 0700 and a missing file
   * 0600 (SQLite gives its WAL and shared-memory files the database's mode). `:memory:` works too.
   */
  path: string;
  /** Clock for TTLs and expiry, ms since the epoch. Default `Date.now`. */
  now?: () => number;
  /** How long a statement waits for another connection's lock before failing, in ms. Default 5000. */
  busyTimeoutMs?: number;
  /** History entries kept per session and pipeline; older ones are deleted. Default 1000. */
  historyMaxEntries?: number;
}

const DEFAULTS = {
  now: Date.now,
  busyTimeoutMs: 5000,
  historyMaxEntries: 1000,
} satisfies Omit<Required<SqliteStoreOptions>, 'path'>;

/** Every store port over one SQLite database. */
export interface SqliteStore {
  journal: Journal;
  auditLog: AuditLog;
  statuses: MessageStatusStore;
  history: HistoryStore;
  outbox: ReplyOutbox;
  handoffs: HandoffStore;
  /** Commits and statements run on the file since it opened (`switchboard_store_*_total`). */
  counts: WriteCounts;
  /** Closes the database; the stores must not be used afterwards. */
  close(): void;
}

/**
 * Opens `path` with the settings every connection uses. WAL lets readers (the CLI) run while the
 * server writes; `synchronous = NORMAL` in WAL mode loses no commit when the process crashes,
 * only possibly the last ones on a power cut, for far fewer fsyncs. What it creates only its
 * user may read: the database holds every message's text and replies (SQLite would create the
 * file 0644, readable by every user of the host).
 */
export function openDatabase(path: string, busyTimeoutMs: number, readonly: boolean): Database {
  try {
    if (!readonly && path !== ':memory:') {
      mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
      // Created empty before SQLite opens it, which then keeps its mode; an existing file is left as it is.
      closeSync(openSync(path, 'a', 0o600));
    }
    const db = new BetterSqlite3(path, { readonly, fileMustExist: readonly, timeout: busyTimeoutMs });
    if (!readonly) {
      db.pragma('journal_mode = WAL');
      db.pragma('synchronous = NORMAL');
      // Checkpoints run on the event loop and fsync: every 10,000 pages (~40 MB of WAL) instead of
      // SQLite's 1,000, so the hot journal pages rewritten by every message are copied back once
      // per checkpoint rather than ten times (bench/HISTORY.md#tuning-pass-2-maps-and-the-journal).
      db.pragma('wal_autocheckpoint = 10000');
      db.pragma('foreign_keys = ON');
    }
    return db;
  } catch (error) {
    throw new SwitchboardError('SB_STORE_UNAVAILABLE', {
      message: `store.path: cannot open ${path}: ${(error as Error).message}`,
      details: { path },
      cause: error,
    });
  }
}

/**
 * The embedded default store (`store: { kind: sqlite }`): journal (with delivery dedup), audit
 * log, message statuses, history, the reply outbox and handoffs in one SQLite file, migrated to
 * the current schema on open.
 * Calls run synchronously on the event loop (better-sqlite3); each is one short indexed statement
 * or transaction. Several processes may open the same file (WAL serializes writers and never
 * blocks readers), but one serves from it: its outbox keeps claims and the chats' heads in memory,
 * its handoff store the sessions in handoff.
 */
export function createSqliteStore(options: SqliteStoreOptions): SqliteStore {
  const now = options.now ?? DEFAULTS.now;
  const db = openDatabase(options.path, options.busyTimeoutMs ?? DEFAULTS.busyTimeoutMs, false);
  try {
    const counts = countWrites(db);
    migrate(db, options.path);
    const commit = createGroupCommit(db);
    const journal = createSqliteJournal(db, commit, now);
    return {
      journal,
      auditLog: createSqliteAuditLog(db, commit),
      statuses: createSqliteMessageStatusStore(db, commit, now),
      history: createSqliteHistoryStore(db, commit, options.historyMaxEntries ?? DEFAULTS.historyMaxEntries),
      outbox: createSqliteReplyOutbox(db, commit, now, journal.rowWrites),
      handoffs: createSqliteHandoffStore(db, commit),
      counts,
      close: () => {
        commit.flush();
        db.close();
      },
    };
  } catch (error) {
    db.close();
    throw error;
  }
}
