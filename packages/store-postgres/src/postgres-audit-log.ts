import {
  AUDIT_EQUALITY_FILTERS,
  AUDIT_RECORD_FIELDS,
  type AuditLog,
  type AuditQuery,
  type AuditRecord,
  decodeAuditCursor,
  encodeAuditCursor,
} from '@switchboard/core';
import { createInsertBatch } from './insert-batch.js';
import type { Sql } from './postgres-connection.js';

const COLUMNS = AUDIT_RECORD_FIELDS;

const NEWEST_FIRST = 'ORDER BY at DESC, id DESC';
/** Filters compared for equality, in the order their SQL conditions are written. */
const EQUALITY_FILTERS = Object.keys(AUDIT_EQUALITY_FILTERS) as Array<keyof typeof AUDIT_EQUALITY_FILTERS>;

/** The WHERE clause of `query` and its parameters, numbered from $1. */
function whereOf(query: AuditQuery): { where: string; values: unknown[] } {
  const conditions: string[] = [];
  const values: unknown[] = [];
  const parameter = (value: unknown) => {
    values.push(value);
    return `$${values.length}`;
  };
  for (const field of EQUALITY_FILTERS) {
    if (query[field] !== undefined)
      conditions.push(`${AUDIT_EQUALITY_FILTERS[field]} = ${parameter(query[field])}`);
  }
  // strpos, not LIKE: the text searched for may hold % and _.
  if (query.text !== undefined) conditions.push(`strpos(lower(text), lower(${parameter(query.text)})) > 0`);
  if (query.since !== undefined) conditions.push(`at >= ${parameter(query.since)}`);
  if (query.until !== undefined) conditions.push(`at < ${parameter(query.until)}`);
  if (query.cursor !== undefined) {
    const cursor = decodeAuditCursor(query.cursor);
    conditions.push(`(at, id) < (${parameter(cursor.at)}, ${parameter(cursor.id)})`);
  }
  return { where: conditions.length > 0 ? `WHERE ${conditions.join(' AND ')}` : '', values };
}

/**
 * The `AuditLog` over `<schema>.audit` (columns and indexes in migrations/0001_init.sql). The
 * payload is a JSON column, so rows come back as the records that were appended. Appends issued
 * together share one insert (`createInsertBatch`); a second record of one id there is ignored as
 * a later insert would ignore it.
 */
export function createPostgresAuditLog(sql: Sql, schemaName: string): AuditLog {
  const table = `${schemaName}.audit`;
  const select = `SELECT ${COLUMNS.join(', ')} FROM ${table}`;
  const insert = createInsertBatch<AuditRecord>(sql, {
    table,
    columns: COLUMNS,
    onConflict: 'ON CONFLICT (id) DO NOTHING',
    keyOf: (record) => record.id,
    valuesOf: (record) =>
      COLUMNS.map((column) =>
        column === 'payload' && record.payload !== null ? JSON.stringify(record.payload) : record[column],
      ),
  });

  return {
    append: insert,
    async query(query) {
      const { where, values } = whereOf(query);
      // One row past the page tells whether another page follows.
      const { rows } = await sql.query<AuditRecord>(
        `${select} ${where} ${NEWEST_FIRST} LIMIT $${values.length + 1}`,
        [...values, query.limit + 1],
      );
      const items = rows.slice(0, query.limit);
      const last = items.at(-1);
      return {
        items,
        nextCursor: rows.length > query.limit && last !== undefined ? encodeAuditCursor(last) : null,
      };
    },
    async deadLetters(limit, tenant) {
      const { rows } = await sql.query<AuditRecord>(
        `${select} WHERE outcome = 'dead_lettered' AND replayed_at IS NULL AND ($2::text IS NULL OR tenant = $2) ${NEWEST_FIRST} LIMIT $1`,
        [limit, tenant ?? null],
      );
      return rows;
    },
    async getDeadLetter(id) {
      const { rows } = await sql.query<AuditRecord>(`${select} WHERE id = $1 AND outcome = 'dead_lettered'`, [
        id,
      ]);
      return rows[0] ?? null;
    },
    async markReplayed(id, atMs) {
      const { rowCount } = await sql.query(
        `UPDATE ${table} SET replayed_at = $1
         WHERE id = $2 AND outcome = 'dead_lettered' AND replayed_at IS NULL`,
        [atMs, id],
      );
      return rowCount === 1;
    },
    async deleteDeadLetter(id) {
      const { rowCount } = await sql.query(
        `DELETE FROM ${table} WHERE id = $1 AND outcome = 'dead_lettered'`,
        [id],
      );
      return rowCount === 1;
    },
    async prune(beforeMs) {
      const { rowCount } = await sql.query(`DELETE FROM ${table} WHERE at < $1`, [beforeMs]);
      return rowCount ?? 0;
    },
  };
}
