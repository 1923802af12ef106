import {
  AUDIT_EQUALITY_FILTERS,
  AUDIT_RECORD_FIELDS,
  type AuditLog,
  type AuditQuery,
  type AuditRecord,
  type DeadLetterPayload,
  decodeAuditCursor,
  encodeAuditCursor,
} from '@switchboard/core';
import type { GroupCommit } from './group-commit.js';
import type { Database, Statement } from 'better-sqlite3';

/** The read side of the audit log: what `switchboard audit` and the admin API need. */
export type AuditReader = Pick<AuditLog, 'query' | 'deadLetters' | 'getDeadLetter'>;

type AuditRow = Omit<AuditRecord, 'payload' | 'outcome' | 'reason'> & {
  outcome: string;
  reason: string | null;
  payload: string | null;
};

const COLUMNS = AUDIT_RECORD_FIELDS;

const SELECT = `SELECT ${COLUMNS.join(', ')} FROM audit`;
const NEWEST_FIRST = 'ORDER BY at DESC, id DESC';
/** Filters compared for equality, in the order their SQL conditions are written. */
const EQUALITY_FILTERS = Object.keys(AUDIT_EQUALITY_FILTERS) as Array<keyof typeof AUDIT_EQUALITY_FILTERS>;

/** A stored payload; dead letters written before `replayable` existed kept the whole message. */
function toPayload(json: string): DeadLetterPayload {
  return { replayable: true, ...(JSON.parse(json) as Omit<DeadLetterPayload, 'replayable'>) };
}

function toRecord(row: AuditRow): AuditRecord {
  // The row was written from an AuditRecord, so its text columns hold the same literal types.
  return { ...row, payload: row.payload === null ? null : toPayload(row.payload) } as AuditRecord;
}

/** The SQL conditions a query uses; queries with the same conditions share one statement. */
function conditionsOf(query: AuditQuery): string[] {
  const conditions: string[] = EQUALITY_FILTERS.filter((field) => query[field] !== undefined).map(
    (field) => `${AUDIT_EQUALITY_FILTERS[field]} = @${field}`,
  );
  // instr, not LIKE: the text searched for may hold % and _. SQLite's lower() folds ASCII only.
  if (query.text !== undefined) conditions.push('instr(lower(text), lower(@text)) > 0');
  if (query.since !== undefined) conditions.push('at >= @since');
  if (query.until !== undefined) conditions.push('at < @until');
  if (query.cursor !== undefined) conditions.push('(at, id) < (@cursorAt, @cursorId)');
  return conditions;
}

/** The audit log's read side over the `audit` table; also used on a read-only connection. */
export function createSqliteAuditReader(db: Database): AuditReader {
  // One statement per combination of filters (at most 2^11), each prepared on first use.
  const queries = new Map<string, Statement<Record<string, unknown>, AuditRow>>();
  const deadLetters = db.prepare<[number], AuditRow>(
    `${SELECT} WHERE outcome = 'dead_lettered' AND replayed_at IS NULL ${NEWEST_FIRST} LIMIT ?`,
  );
  const tenantDeadLetters = db.prepare<[string, number], AuditRow>(
    `${SELECT} WHERE outcome = 'dead_lettered' AND replayed_at IS NULL AND tenant = ? ${NEWEST_FIRST} LIMIT ?`,
  );
  const deadLetter = db.prepare<[string], AuditRow>(`${SELECT} WHERE id = ? AND outcome = 'dead_lettered'`);

  function statementFor(conditions: string[]): Statement<Record<string, unknown>, AuditRow> {
    const key = conditions.join(' AND ');
    let statement = queries.get(key);
    if (statement === undefined) {
      const where = conditions.length > 0 ? `WHERE ${key}` : '';
      statement = db.prepare<Record<string, unknown>, AuditRow>(
        `${SELECT} ${where} ${NEWEST_FIRST} LIMIT @limit`,
      );
      queries.set(key, statement);
    }
    return statement;
  }

  return {
    async query(query) {
      const cursor = query.cursor === undefined ? undefined : decodeAuditCursor(query.cursor);
      const parameters: Record<string, unknown> = { limit: query.limit + 1 };
      for (const field of [...EQUALITY_FILTERS, 'since', 'until'] as const) {
        if (query[field] !== undefined) parameters[field] = query[field];
      }
      if (query.text !== undefined) parameters.text = query.text;
      if (cursor !== undefined) {
        parameters.cursorAt = cursor.at;
        parameters.cursorId = cursor.id;
      }
      // One row past the page tells whether another page follows.
      const rows = statementFor(conditionsOf(query)).all(parameters);
      const items = rows.slice(0, query.limit).map(toRecord);
      const last = items.at(-1);
      return {
        items,
        nextCursor: rows.length > query.limit && last !== undefined ? encodeAuditCursor(last) : null,
      };
    },
    async deadLetters(limit, tenant) {
      return (tenant === undefined ? deadLetters.all(limit) : tenantDeadLetters.all(tenant, limit)).map(
        toRecord,
      );
    },
    async getDeadLetter(id) {
      const row = deadLetter.get(id);
      return row === undefined ? null : toRecord(row);
    },
  };
}

/** The `AuditLog` over the `audit` table (schema and indexes in migrations/0001_init.sql). */
export function createSqliteAuditLog(db: Database, commit: GroupCommit): AuditLog {
  const insert = db.prepare<Record<string, unknown>>(
    `INSERT OR IGNORE INTO audit (${COLUMNS.join(', ')}) VALUES (${COLUMNS.map((column) => `@${column}`).join(', ')})`,
  );
  const markReplayed = db.prepare<[number, string]>(
    `UPDATE audit SET replayed_at = ? WHERE id = ? AND outcome = 'dead_lettered' AND replayed_at IS NULL`,
  );
  const prune = db.prepare<[number]>('DELETE FROM audit WHERE at < ?');
  const deleteDeadLetter = db.prepare<[string]>(
    `DELETE FROM audit WHERE id = ? AND outcome = 'dead_lettered'`,
  );

  return {
    ...createSqliteAuditReader(db),
    append(record) {
      const row = { ...record, payload: record.payload === null ? null : JSON.stringify(record.payload) };
      return commit(() => insert.run(row));
    },
    async markReplayed(id, atMs) {
      return markReplayed.run(atMs, id).changes === 1;
    },
    async deleteDeadLetter(id) {
      return deleteDeadLetter.run(id).changes === 1;
    },
    async prune(beforeMs) {
      return prune.run(beforeMs).changes;
    },
  };
}
