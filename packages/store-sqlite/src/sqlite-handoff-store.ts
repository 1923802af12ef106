import {
  type Handoff,
  type HandoffEntry,
  type HandoffStore,
  type HoldResult,
  type InboundMessage,
  newHandoff,
  replyEntryOf,
  withoutRaw,
} from '@switchboard/core';
import type { Database } from 'better-sqlite3';
import type { GroupCommit } from './group-commit.js';

/** A row of `handoff` (migrations/0011_handoffs.sql, 0014_handoff_tenant.sql). */
interface HandoffRow {
  session: string;
  tenant: string | null;
  reason: string;
  started_by: string;
  started_at: number;
  active_at: number;
  pipeline: string | null;
  origin: string | null;
  held: number;
  unread: number;
  waiting_since: number | null;
  last_seq: number;
}

function handoffOf(row: HandoffRow): Handoff {
  return {
    session: row.session,
    ...(row.tenant === null ? {} : { tenant: row.tenant }),
    reason: row.reason,
    by: row.started_by,
    startedAt: row.started_at,
    activeAt: row.active_at,
    pipeline: row.pipeline,
    origin: row.origin === null ? null : (JSON.parse(row.origin) as InboundMessage),
    held: row.held,
    unread: row.unread,
    waitingSince: row.waiting_since,
    lastSeq: row.last_seq,
  };
}

const entryOf = (row: { seq: number; entry: string }): HandoffEntry =>
  ({ seq: row.seq, ...JSON.parse(row.entry) }) as HandoffEntry;

/**
 * The `HandoffStore` over the `handoff` and `handoff_entry` tables. Every write runs inside the
 * group commit and resolves once committed; reading and writing in the same callback makes each
 * call atomic, as the port asks. The file has one serving process, so the sessions in handoff
 * are also kept in memory (loaded here): `hold` — once per turn — answers `not_in_handoff` for
 * any other session without touching the database. That set may name more sessions than are in
 * handoff (a begin whose commit failed, an end not yet committed), never fewer: a session it
 * names is checked in the database. It changes outside the writes, which a failed batch runs
 * twice: a begin names the session when called, an end forgets it once committed.
 */
export function createSqliteHandoffStore(db: Database, commit: GroupCommit): HandoffStore {
  const select = db.prepare<[string], HandoffRow>('SELECT * FROM handoff WHERE session = ?');
  const insert = db.prepare<HandoffRow>(
    `INSERT INTO handoff (session, tenant, reason, started_by, started_at, active_at, pipeline, origin, held,
       unread, waiting_since, last_seq)
     VALUES (@session, @tenant, @reason, @started_by, @started_at, @active_at, @pipeline, @origin, @held,
       @unread, @waiting_since, @last_seq)`,
  );
  const update = db.prepare<HandoffRow>(
    `UPDATE handoff SET active_at = @active_at, pipeline = @pipeline, origin = @origin, held = @held,
       unread = @unread, waiting_since = @waiting_since, last_seq = @last_seq
     WHERE session = @session`,
  );
  const remove = db.prepare<[string]>('DELETE FROM handoff WHERE session = ?');
  const written = db.prepare<[string, string], number>(
    'SELECT 1 FROM handoff_entry WHERE session = ? AND id = ?',
  );
  const append = db.prepare<[string, number, string, string]>(
    'INSERT INTO handoff_entry (session, seq, id, entry) VALUES (?, ?, ?, ?)',
  );
  const entriesAfter = db.prepare<[string, number, number], { seq: number; entry: string }>(
    'SELECT seq, entry FROM handoff_entry WHERE session = ? AND seq > ? ORDER BY seq LIMIT ?',
  );
  const removeEntries = db.prepare<[string]>('DELETE FROM handoff_entry WHERE session = ?');
  // The inbox order of byLongestWaiting: sessions with unread messages first, the oldest first.
  const longestWaiting = db.prepare<[number], HandoffRow>(
    `SELECT * FROM handoff ORDER BY waiting_since IS NULL, waiting_since, started_at, session LIMIT ?`,
  );
  const idleBefore = db.prepare<[number, number], HandoffRow>(
    'SELECT * FROM handoff WHERE active_at < ? ORDER BY active_at LIMIT ?',
  );
  const counted = db.prepare<[], number>('SELECT count(*) FROM handoff').pluck();

  const inHandoff = new Set(db.prepare<[], string>('SELECT session FROM handoff').pluck().all());

  /** Begins called so far, and the number of the last begin of each session in `inHandoff`. */
  let begins = 0;
  const lastBeginOf = new Map<string, number>();

  /** Runs `write` in the group commit and answers what it returned, once committed. */
  async function committed<T>(write: () => T): Promise<T> {
    let result: { value: T } | undefined;
    // A batch that fails runs each write again alone: the last run's answer is the committed one.
    await commit(() => {
      result = { value: write() };
    });
    return (result as { value: T }).value;
  }

  const rowOf = (handoff: Handoff): HandoffRow => ({
    session: handoff.session,
    tenant: handoff.tenant ?? null,
    reason: handoff.reason,
    started_by: handoff.by,
    started_at: handoff.startedAt,
    active_at: handoff.activeAt,
    pipeline: handoff.pipeline,
    origin: handoff.origin === null ? null : JSON.stringify(handoff.origin),
    held: handoff.held,
    unread: handoff.unread,
    waiting_since: handoff.waitingSince,
    last_seq: handoff.lastSeq,
  });

  return {
    async begin(session, start) {
      // Named before the commit, so a hold queued behind this begin looks in the database.
      inHandoff.add(session);
      begins += 1;
      lastBeginOf.set(session, begins);
      return committed(() => {
        const found = select.get(session);
        if (found !== undefined) return { handoff: handoffOf(found), created: false };
        const handoff = newHandoff(session, start);
        insert.run(rowOf(handoff));
        return { handoff, created: true };
      });
    },

    async get(session) {
      if (!inHandoff.has(session)) return null;
      const row = select.get(session);
      return row === undefined ? null : handoffOf(row);
    },

    async hold(session, messages, { at, pipeline, maxEntries }) {
      if (!inHandoff.has(session)) return 'not_in_handoff';
      return committed((): HoldResult => {
        const row = select.get(session);
        if (row === undefined) return 'not_in_handoff';
        const ids = new Set<string>();
        const fresh = messages.filter((message) => {
          if (ids.has(message.id) || written.get(session, message.id) !== undefined) return false;
          ids.add(message.id);
          return true;
        });
        if (fresh.length === 0) return 'held';
        if (row.held + fresh.length > maxEntries) return 'full';
        const handoff = handoffOf(row);
        for (const message of fresh) {
          handoff.lastSeq += 1;
          const kept = withoutRaw(message);
          append.run(
            session,
            handoff.lastSeq,
            message.id,
            JSON.stringify({ at, from: 'user', message: kept }),
          );
          handoff.origin = kept;
        }
        handoff.held += fresh.length;
        handoff.unread += fresh.length;
        handoff.waitingSince ??= at;
        if (pipeline !== undefined) handoff.pipeline = pipeline;
        update.run(rowOf(handoff));
        return 'held';
      });
    },

    async reply(session, reply, { maxEntries }) {
      if (!inHandoff.has(session)) return 'not_in_handoff';
      return committed(() => {
        const row = select.get(session);
        if (row === undefined) return 'not_in_handoff' as const;
        const before = handoffOf(row);
        if (written.get(session, reply.id) !== undefined) return { before };
        if (row.last_seq - row.held >= maxEntries) return 'full' as const;
        const handoff = handoffOf(row);
        handoff.lastSeq += 1;
        const entry = replyEntryOf(reply);
        append.run(session, handoff.lastSeq, reply.id, JSON.stringify(entry));
        handoff.unread = 0;
        handoff.waitingSince = null;
        handoff.activeAt = reply.at;
        update.run(rowOf(handoff));
        return { before };
      });
    },

    async transcript(session, afterSeq, limit) {
      if (!inHandoff.has(session) || limit <= 0) return [];
      return entriesAfter.all(session, afterSeq, limit).map(entryOf);
    },

    async list(limit) {
      return limit > 0 ? longestWaiting.all(limit).map(handoffOf) : [];
    },

    async end(session, options) {
      if (!inHandoff.has(session)) return null;
      const beginsBefore = begins;
      const { ended, gone } = await committed(() => {
        const row = select.get(session);
        // Gone already: a begin whose commit failed named it.
        if (row === undefined) return { ended: null, gone: true };
        if (options?.startedAt !== undefined && row.started_at !== options.startedAt)
          return { ended: null, gone: false };
        if (options?.activeAt !== undefined && row.active_at !== options.activeAt)
          return { ended: null, gone: false };
        const transcript = entriesAfter.all(session, 0, row.last_seq).map(entryOf);
        removeEntries.run(session);
        remove.run(session);
        return { ended: { handoff: handoffOf(row), transcript }, gone: true };
      });
      // Forgotten once the end committed, unless a begin of the session was called since this end
      // was: that begin's write ran after this one, or is still to run.
      if (gone && (lastBeginOf.get(session) ?? 0) <= beginsBefore) {
        inHandoff.delete(session);
        lastBeginOf.delete(session);
      }
      return ended;
    },

    async idle(before, limit) {
      return limit > 0 ? idleBefore.all(before, limit).map(handoffOf) : [];
    },

    async count() {
      return counted.get() as number;
    },
  };
}
