import type { Database } from 'better-sqlite3';

interface PendingWrite {
  write: () => void;
  resolve: () => void;
  reject: (error: unknown) => void;
}

/** Runs `write` inside the next group commit; resolves once that commit is on disk (in the WAL). */
export type GroupCommit = ((write: () => void) => Promise<void>) & {
  /** Commits what is pending now, synchronously (before the database closes). */
  flush(): void;
};

/**
 * Group commit: the writes issued during one turn of the event loop run in one transaction,
 * committed on `setImmediate`, and each caller's promise settles after that commit. Under load
 * this turns one WAL commit per statement into one per batch — the store's largest cost on the
 * HTTP path (docs/BENCHMARKS.md) — while keeping "resolved means committed". Each write runs in
 * its own savepoint, so one failing write fails alone.
 */
export function createGroupCommit(db: Database): GroupCommit {
  let pending: PendingWrite[] = [];
  const runOne = db.transaction((write: () => void) => write());
  const runBatch = db.transaction((batch: PendingWrite[]) => {
    const failures = new Map<PendingWrite, unknown>();
    for (const item of batch) {
      try {
        runOne(item.write);
      } catch (error) {
        failures.set(item, error);
      }
    }
    return failures;
  });

  function flush(): void {
    if (pending.length === 0) return;
    const batch = pending;
    pending = [];
    let failures: Map<PendingWrite, unknown>;
    try {
      failures = runBatch(batch);
    } catch (error) {
      for (const item of batch) item.reject(error);
      return;
    }
    for (const item of batch) {
      if (failures.has(item)) item.reject(failures.get(item));
      else item.resolve();
    }
  }

  const commit = (write: () => void) =>
    new Promise<void>((resolve, reject) => {
      pending.push({ write, resolve, reject });
      if (pending.length === 1) setImmediate(flush);
    });
  return Object.assign(commit, { flush });
}
