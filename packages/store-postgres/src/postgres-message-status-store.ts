import { type MessageStatus, type MessageStatusStore, OUTCOME_KINDS, isFinalStatus } from '@switchboard/core';
import type { Sql } from './postgres-connection.js';

/**
 * The `MessageStatusStore` over `<schema>.message_status` and `<schema>.idempotency_key`. Expiry
 * of keys reads the injected clock, never the database's, as the other stores do.
 */
export function createPostgresMessageStatusStore(
  sql: Sql,
  schemaName: string,
  now: () => number,
): MessageStatusStore {
  const statuses = `${schemaName}.message_status`;
  const keys = `${schemaName}.idempotency_key`;

  /**
   * Binds `key` unless a live binding holds it; true when this call bound it. The upsert
   * overwrites only an expired binding, and PostgreSQL makes concurrent upserts of one key wait
   * for each other, so exactly one of several concurrent claims binds it.
   */
  async function bind(key: string, messageId: string, ttlMs: number): Promise<boolean> {
    const nowMs = now();
    const { rowCount } = await sql.query(
      `INSERT INTO ${keys} (key, message_id, expires_at) VALUES ($1, $2, $3)
       ON CONFLICT (key) DO UPDATE SET message_id = excluded.message_id, expires_at = excluded.expires_at
       WHERE ${keys}.expires_at <= $4`,
      [key, messageId, nowMs + ttlMs, nowMs],
    );
    return rowCount === 1;
  }

  return {
    async put(status) {
      // `replacesStatus` in SQL: not older, and never a non-final status over a final one.
      await sql.query(
        `INSERT INTO ${statuses} (id, updated_at, body) VALUES ($1, $2, $3)
         ON CONFLICT (id) DO UPDATE SET updated_at = excluded.updated_at, body = excluded.body
         WHERE excluded.updated_at >= ${statuses}.updated_at
           AND ($4::boolean OR NOT ((${statuses}.body ->> 'status') = ANY($5::text[])
             AND coalesce(${statuses}.body ->> 'delivery', '') <> 'pending'))`,
        [status.id, status.updated_at, JSON.stringify(status), isFinalStatus(status), [...OUTCOME_KINDS]],
      );
    },
    async get(id) {
      const { rows } = await sql.query<{ body: MessageStatus }>(
        `SELECT body FROM ${statuses} WHERE id = $1`,
        [id],
      );
      return rows[0]?.body ?? null;
    },
    async claimIdempotencyKey(key, messageId, ttlMs) {
      // The holder is read by a second statement, which sees the binding of a claim that
      // committed after the upsert began. Should prune delete that binding in between, it had
      // expired, so the next pass binds it.
      for (;;) {
        if (await bind(key, messageId, ttlMs)) return null;
        const { rows } = await sql.query<{ message_id: string }>(
          `SELECT message_id FROM ${keys} WHERE key = $1`,
          [key],
        );
        if (rows[0] !== undefined) return rows[0].message_id;
      }
    },
    async prune(beforeMs) {
      const { rowCount } = await sql.query(
        `WITH expired AS (DELETE FROM ${keys} WHERE expires_at <= $2)
         DELETE FROM ${statuses} WHERE updated_at < $1`,
        [beforeMs, now()],
      );
      return rowCount ?? 0;
    },
  };
}
