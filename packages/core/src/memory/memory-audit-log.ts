import { type AuditCursor, decodeAuditCursor, encodeAuditCursor } from '../ports/audit-cursor.js';
import type { AuditLog, AuditQuery, AuditRecord } from '../ports/audit-log.js';

/** Newest first: `at` descending, then `id` descending so equal timestamps have a fixed order. */
function newestFirst(a: AuditRecord, b: AuditRecord): number {
  if (a.at !== b.at) return b.at - a.at;
  return a.id < b.id ? 1 : a.id > b.id ? -1 : 0;
}

function containsIgnoringCase(text: string | null, part: string): boolean {
  return text?.toLowerCase().includes(part.toLowerCase()) === true;
}

function matches(record: AuditRecord, query: AuditQuery, after: AuditCursor | null): boolean {
  return (
    (query.outcome === undefined || record.outcome === query.outcome) &&
    (query.reason === undefined || record.reason === query.reason) &&
    (query.rule === undefined || record.rule === query.rule) &&
    (query.channel === undefined || record.channel === query.channel) &&
    (query.tenant === undefined || record.tenant === query.tenant) &&
    (query.session === undefined || record.session === query.session) &&
    (query.sender === undefined || record.sender_id === query.sender) &&
    (query.message === undefined || record.message_id === query.message) &&
    (query.text === undefined || containsIgnoringCase(record.text, query.text)) &&
    (query.since === undefined || record.at >= query.since) &&
    (query.until === undefined || record.at < query.until) &&
    (after === null || record.at < after.at || (record.at === after.at && record.id < after.id))
  );
}

/**
 * An `AuditLog` in process memory that keeps every record until `prune`: for tests, benchmarks
 * and `store: memory`. Queries scan all records, which is fine at those sizes. Records are
 * copied in and out so callers cannot change what is stored.
 */
export function createMemoryAuditLog(): AuditLog {
  const records = new Map<string, AuditRecord>();

  function deadLetter(id: string): AuditRecord | undefined {
    const record = records.get(id);
    return record?.outcome === 'dead_lettered' ? record : undefined;
  }

  return {
    async append(record) {
      if (!records.has(record.id)) records.set(record.id, structuredClone(record));
    },
    async query(query) {
      const after = query.cursor === undefined ? null : decodeAuditCursor(query.cursor);
      const found = [...records.values()].filter((record) => matches(record, query, after)).sort(newestFirst);
      const items = found.slice(0, query.limit).map((record) => structuredClone(record));
      const last = items.at(-1);
      return {
        items,
        nextCursor: found.length > query.limit && last !== undefined ? encodeAuditCursor(last) : null,
      };
    },
    async deadLetters(limit, tenant) {
      return [...records.values()]
        .filter(
          (record) =>
            record.outcome === 'dead_lettered' &&
            record.replayed_at === null &&
            (tenant === undefined || record.tenant === tenant),
        )
        .sort(newestFirst)
        .slice(0, limit)
        .map((record) => structuredClone(record));
    },
    async getDeadLetter(id) {
      const record = deadLetter(id);
      return record === undefined ? null : structuredClone(record);
    },
    async markReplayed(id, atMs) {
      const record = deadLetter(id);
      if (record === undefined || record.replayed_at !== null) return false;
      record.replayed_at = atMs;
      return true;
    },
    async deleteDeadLetter(id) {
      return deadLetter(id) !== undefined && records.delete(id);
    },
    async prune(beforeMs) {
      let pruned = 0;
      for (const [id, record] of records) {
        if (record.at < beforeMs) {
          records.delete(id);
          pruned += 1;
        }
      }
      return pruned;
    },
  };
}
