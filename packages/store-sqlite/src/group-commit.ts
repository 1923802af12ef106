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
 * HTTP path (bench/HISTORY.md#tuning-pass-2-maps-and-the-journal) — while keeping "resolved means
 * committed". A failing write
 * rolls the batch back; the batch then runs again one write per transaction, so it fails alone.
 */
export function createGroupCommit(db: Database): GroupCommit {
  let pending: PendingWrite[] = [];
  const runOne = db.transaction((write: () => void) => write());
  const runBatch = db.transaction((batch: PendingWrite[]) => {
    for (const item of batch) item.write();
  });

  function runAlone(item: PendingWrite): void {
    try {
      runOne(item.write);
      item.resolve();
    } catch (error) {
      item.reject(error);
    }
  }

  function flush(): void {
    if (pending.length === 0) return;
    const batch = pending;
    pending = [];
    try {
      runBatch(batch);
    } catch {
      for (const item of batch) runAlone(item);
      return;
    }
    for (const item of batch) item.resolve();
  }

  const commit = (write: () => void) =>
    new Promise<void>((resolve, reject) => {
      pending.push({ write, resolve, reject });
      if (pending.length === 1) setImmediate(flush);
    });
  return Object.assign(commit, { flush });
}
