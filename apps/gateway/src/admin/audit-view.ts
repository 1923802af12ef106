import type { AuditRecord } from '@switchboard/core';

/**
 * An audit record as the admin API and `switchboard audit --json` show it: without the dead
 * letter's payload, which is kept for replay, not for reading.
 */
export function auditView({ payload: _payload, ...record }: AuditRecord): Omit<AuditRecord, 'payload'> {
  return record;
}
