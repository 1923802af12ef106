import type { DedupStore } from '@switchboard/core';
import type { Database } from 'better-sqlite3';

/** `firstSeen` calls between two sweeps of expired rows. */
const SWEEP_EVERY_WRITES = 1000;

/**
 * The `DedupStore` over the `dedup` table. `firstSeen` is one upsert that only overwrites an
 * expired row, so "first" is decided by SQLite's write lock, also between processes. Expired rows
 * count as absent at once and are deleted every `SWEEP_EVERY_WRITES` calls.
 */
export function createSqliteDedupStore(db: Database, now: () => number): DedupStore {
  const claim = db.prepare<{ key: string; expiresAt: number; now: number }>(
    `INSERT INTO dedup (key, expires_at) VALUES (@key, @expiresAt)
     ON CONFLICT (key) DO UPDATE SET expires_at = excluded.expires_at WHERE dedup.expires_at <= @now`,
  );
  const forget = db.prepare<[string]>('DELETE FROM dedup WHERE key = ?');
  const sweep = db.prepare<[number]>('DELETE FROM dedup WHERE expires_at <= ?');
  let writesSinceSweep = 0;

  return {
    async firstSeen(key, ttlMs) {
      const nowMs = now();
      writesSinceSweep += 1;
      if (writesSinceSweep >= SWEEP_EVERY_WRITES) {
        sweep.run(nowMs);
        writesSinceSweep = 0;
      }
      return claim.run({ key, expiresAt: nowMs + ttlMs, now: nowMs }).changes === 1;
    },
    async forget(key) {
      forget.run(key);
    },
  };
}
