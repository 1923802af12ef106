import {
  type IdempotencyBinding,
  type IdempotencyClaim,
  type MessageStatus,
  type MessageStatusStore,
  type StatusRank,
  type StoredMessageStatus,
  replacesStatus,
  statusFromStore,
  statusRank,
} from '@switchboard/core';
import { createInsertBatch } from './insert-batch.js';
import type { Sql } from './postgres-connection.js';

/** A status to put, with its rank computed once. */
interface RankedStatus {
  status: MessageStatus;
  rank: StatusRank;
}

/**
 * The `MessageStatusStore` over `<schema>.message_status` and `<schema>.idempotency_key`. Expiry
 * of keys reads the injected clock, never the database's, as the other stores do. Puts issued
 * together share one upsert (`createInsertBatch`).
 */
export function createPostgresMessageStatusStore(
  sql: Sql,
  schemaName: string,
  now: () => number,
): MessageStatusStore {
  const statuses = `${schemaName}.message_status`;
  const keys = `${schemaName}.idempotency_key`;
  const upsert = createInsertBatch<RankedStatus>(sql, {
    table: statuses,
    columns: ['id', 'updated_at', 'version', 'final', 'body'],
    // `replacesStatus` in SQL: a version not lower, and never a non-final status over a final one.
    onConflict: `ON CONFLICT (id) DO UPDATE SET updated_at = excluded.updated_at, version = excluded.version,
      final = excluded.final, body = excluded.body
      WHERE excluded.version >= ${statuses}.version AND (excluded.final OR NOT ${statuses}.final)`,
    valuesOf: ({ status, rank }) => [
      status.id,
      status.updated_at,
      rank.version,
      rank.final,
      JSON.stringify(status),
    ],
    keyOf: ({ status }) => status.id,
    replaces: (held, incoming) => replacesStatus(held.rank, incoming.rank),
  });

  /**
   * Binds the key, with its fingerprint, unless a live binding holds it; true when this call
   * bound it. The upsert overwrites only an expired binding, and PostgreSQL makes concurrent
   * upserts of one key wait for each other, so exactly one of several concurrent claims binds it
   * — on every replica, whose claims all meet here.
   */
  async function bind(claim: IdempotencyClaim): Promise<boolean> {
    const nowMs = now();
    const { rowCount } = await sql.query(
      `INSERT INTO ${keys} (channel, credential, key, fingerprint, message_id, expires_at)
       VALUES ($1, $2, $3, $4, $5, $6)
       ON CONFLICT (channel, credential, key) DO UPDATE SET fingerprint = excluded.fingerprint,
         message_id = excluded.message_id, expires_at = excluded.expires_at
       WHERE ${keys}.expires_at <= $7`,
      [
        claim.channel,
        claim.credential,
        claim.key,
        claim.fingerprint,
        claim.messageId,
        nowMs + claim.ttlMs,
        nowMs,
      ],
    );
    return rowCount === 1;
  }

  return {
    put: (status) => upsert({ status, rank: statusRank(status) }),
    async get(id) {
      const { rows } = await sql.query<{ body: StoredMessageStatus }>(
        `SELECT body FROM ${statuses} WHERE id = $1`,
        [id],
      );
      const stored = rows[0]?.body;
      return stored === undefined ? null : statusFromStore(stored);
    },
    async claimIdempotencyKey(claim): Promise<IdempotencyBinding | null> {
      // The holder is read by a second statement, which sees the binding of a claim that
      // committed after the upsert began. Should prune delete that binding in between, it had
      // expired, so the next pass binds it.
      for (;;) {
        if (await bind(claim)) return null;
        const { rows } = await sql.query<{ message_id: string; fingerprint: string }>(
          `SELECT message_id, fingerprint FROM ${keys} WHERE channel = $1 AND credential = $2 AND key = $3`,
          [claim.channel, claim.credential, claim.key],
        );
        const bound = rows[0];
        if (bound !== undefined) return { messageId: bound.message_id, fingerprint: bound.fingerprint };
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
