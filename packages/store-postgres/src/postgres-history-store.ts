import type { HistoryEntry, HistoryStore } from '@switchboard/core';
import type { Sql } from './postgres-connection.js';

/**
 * The `HistoryStore` over `<schema>.history`. Each append trims the conversation to its newest
 * `maxEntries` in the same transaction, so a long-lived session cannot grow the table without
 * bound; `seq` (an identity column) keeps append order across replicas.
 */
export function createPostgresHistoryStore(sql: Sql, schemaName: string, maxEntries: number): HistoryStore {
  const table = `${schemaName}.history`;

  return {
    async append(session, pipeline, entries) {
      if (entries.length === 0) return;
      await sql.transaction(async (tx) => {
        await tx.query(
          `INSERT INTO ${table} (session, pipeline, role, content)
           SELECT $1, $2, entry.role, entry.content
           FROM unnest($3::text[], $4::text[]) WITH ORDINALITY AS entry (role, content, position)
           ORDER BY entry.position`,
          [session, pipeline, entries.map((entry) => entry.role), entries.map((entry) => entry.content)],
        );
        // The subquery finds the newest row past the kept ones; NULL (nothing to trim) deletes nothing.
        await tx.query(
          `DELETE FROM ${table} WHERE session = $1 AND pipeline = $2 AND seq <= (
             SELECT seq FROM ${table} WHERE session = $1 AND pipeline = $2
             ORDER BY seq DESC OFFSET $3 LIMIT 1)`,
          [session, pipeline, maxEntries],
        );
      });
    },
    async recent(session, pipeline, limit) {
      if (limit <= 0) return [];
      const { rows } = await sql.query<HistoryEntry>(
        `SELECT role, content FROM (
           SELECT seq, role, content FROM ${table} WHERE session = $1 AND pipeline = $2
           ORDER BY seq DESC LIMIT $3) AS newest
         ORDER BY seq`,
        [session, pipeline, limit],
      );
      return rows;
    },
  };
}
