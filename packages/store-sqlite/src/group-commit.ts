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
  /**
   * Runs `issue`; the writes it issues (synchronously, through this group commit: any store of
   * the same file) form one unit, which commits whole or not at all, also when a failed batch is
   * run again one write at a time; each caller's promise settles with the unit. When `issue`
   * throws, nothing of the unit runs: its writes reject with that error, which `unit` rethrows.
   */
  unit(issue: () => void): void;
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

  function enqueue(item: PendingWrite): void {
    pending.push(item);
    if (pending.length === 1) setImmediate(flush);
  }

  /** The writes of the unit being issued, if any. */
  let collecting: PendingWrite[] | undefined;

  function unit(issue: () => void): void {
    // A unit issued inside another is part of it.
    if (collecting !== undefined) {
      issue();
      return;
    }
    const items: PendingWrite[] = [];
    collecting = items;
    try {
      issue();
    } catch (error) {
      // Issued in part: none of it runs, so that the unit stays whole or nothing.
      for (const item of items) item.reject(error);
      throw error;
    } finally {
      collecting = undefined;
    }
    if (items.length > 0)
      enqueue({
        write: () => {
          for (const item of items) item.write();
        },
        resolve: () => {
          for (const item of items) item.resolve();
        },
        reject: (error) => {
          for (const item of items) item.reject(error);
        },
      });
  }

  const commit = (write: () => void) =>
    new Promise<void>((resolve, reject) => {
      const item = { write, resolve, reject };
      if (collecting === undefined) enqueue(item);
      else collecting.push(item);
    });
  return Object.assign(commit, { flush, unit });
}
