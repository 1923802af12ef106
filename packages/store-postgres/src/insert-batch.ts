import { isSwitchboardError } from '@switchboard/core';
import type { Queryable } from './postgres-connection.js';

/** Most rows one statement writes: a modest statement, far below PostgreSQL's 65535 parameters. */
const MAX_ROWS = 500;
/** Bind parameters one statement may carry (the protocol counts them in 16 bits). */
const MAX_PARAMETERS = 65_535;

/** The table a batch writes and how a row joins a statement. */
export interface InsertBatchOptions<Row> {
  /** The table, schema-qualified and quoted. */
  table: string;
  columns: readonly string[];
  /** What follows the VALUES list: the `ON CONFLICT` clause. */
  onConflict: string;
  /** The row's values, one per column. */
  valuesOf(row: Row): unknown[];
  /**
   * For an `ON CONFLICT DO UPDATE`, which cannot touch one row twice in a statement: the key of
   * the conflict, and whether a row written after `held` (of the same key) takes its place.
   * Two rows of one key share a statement as the one of them that sequential upserts would leave;
   * when neither replaces the other, which one stays depends on what is stored, so the later
   * waits for the next statement. A call whose row gave way settles with the kept one (even had
   * PostgreSQL refused its own values: what is stored is the same).
   */
  sameKey?: { keyOf(row: Row): string; replaces(held: Row, incoming: Row): boolean };
}

/** One call waiting for its row. */
interface PendingInsert<Row> {
  row: Row;
  values: unknown[];
  resolve(): void;
  reject(error: unknown): void;
}

const isUnavailable = (error: unknown) => isSwitchboardError(error, 'SB_STORE_UNAVAILABLE');

/**
 * Writes rows into one table, the rows of many calls in one multi-row `INSERT … VALUES (…), (…)
 * <onConflict>`, like a group commit: the calls of one turn of the event loop (`setImmediate`)
 * form a statement, at most one statement per batch is in flight, and the calls made meanwhile
 * form the next as soon as it answers. A statement error (a value PostgreSQL refuses:
 * `toStoreError` passes it on) writes that statement's calls again one statement each, in call
 * order, so each call settles as its own statement would and good rows are written. An
 * unavailable database (SB_STORE_UNAVAILABLE) rejects the statement's calls and those that
 * waited behind it, which would otherwise each wait out another timeout in turn. Nothing is
 * queued beyond the calls awaiting their promise.
 */
export function createInsertBatch<Row>(
  sql: Queryable,
  options: InsertBatchOptions<Row>,
): (row: Row) => Promise<void> {
  const { table, columns, onConflict, valuesOf, sameKey } = options;
  const maxRows = Math.min(MAX_ROWS, Math.floor(MAX_PARAMETERS / columns.length));
  const head = `INSERT INTO ${table} (${columns.join(', ')}) VALUES`;
  let pending: PendingInsert<Row>[] = [];
  let scheduled = false;
  let inFlight = false;

  function insert(rows: readonly PendingInsert<Row>[]): Promise<unknown> {
    const tuples = rows.map(
      (_, row) => `(${columns.map((_, column) => `$${row * columns.length + column + 1}`).join(', ')})`,
    );
    return sql.query(
      `${head} ${tuples.join(', ')} ${onConflict}`,
      rows.flatMap((row) => row.values),
    );
  }

  /**
   * Takes the next statement's calls off `pending`, in call order, and the rows they write: a
   * call of a key already in the statement merges into its row, or, when neither replaces the
   * other, waits with every later call of its key.
   */
  function take(): { rows: PendingInsert<Row>[]; calls: PendingInsert<Row>[] } {
    const rows: PendingInsert<Row>[] = [];
    const calls: PendingInsert<Row>[] = [];
    const rowOfKey = new Map<string, number>();
    const waiting = new Set<string>();
    const left: PendingInsert<Row>[] = [];
    let index = 0;
    for (; index < pending.length; index += 1) {
      const call = pending[index]!;
      const key = sameKey?.keyOf(call.row);
      const at = key === undefined ? undefined : rowOfKey.get(key);
      if (key !== undefined && (waiting.has(key) || (at !== undefined && !mergeInto(at, call)))) {
        waiting.add(key);
        left.push(call);
        continue;
      }
      if (at === undefined) {
        if (rows.length === maxRows) break;
        if (key !== undefined) rowOfKey.set(key, rows.length);
        rows.push(call);
      }
      calls.push(call);
    }
    pending = [...left, ...pending.slice(index)];
    return { rows, calls };

    /** Keeps whichever of row `at` and `call` sequential upserts would leave; false when that depends on what is stored. */
    function mergeInto(at: number, call: PendingInsert<Row>): boolean {
      const held = rows[at]!;
      if (sameKey!.replaces(held.row, call.row)) rows[at] = call;
      else if (!sameKey!.replaces(call.row, held.row)) return false;
      return true;
    }
  }

  /**
   * Writes `rows` for `calls` and settles them; on a statement error each call again with a
   * statement of its own, in order. Answers the error of an unavailable database, which has
   * rejected the calls not written.
   */
  async function write(rows: PendingInsert<Row>[], calls: PendingInsert<Row>[]): Promise<unknown> {
    try {
      await insert(rows);
      for (const call of calls) call.resolve();
      return undefined;
    } catch (error) {
      if (isUnavailable(error)) return rejectAll(calls, error);
      // A lone call's own statement was this one.
      if (calls.length === 1) {
        calls[0]!.reject(error);
        return undefined;
      }
    }
    for (const [index, call] of calls.entries()) {
      try {
        await insert([call]);
        call.resolve();
      } catch (error) {
        if (isUnavailable(error)) return rejectAll(calls.slice(index), error);
        call.reject(error);
      }
    }
    return undefined;
  }

  /** Rejects `calls` with `error`, and answers it. */
  function rejectAll(calls: readonly PendingInsert<Row>[], error: unknown): unknown {
    for (const call of calls) call.reject(error);
    return error;
  }

  async function flush(): Promise<void> {
    scheduled = false;
    inFlight = true;
    const { rows, calls } = take();
    const unavailable = await write(rows, calls);
    if (unavailable !== undefined) rejectAll(pending.splice(0), unavailable);
    inFlight = false;
    if (pending.length > 0) void flush();
  }

  return (row) =>
    new Promise<void>((resolve, reject) => {
      const call = { row, values: valuesOf(row), resolve, reject };
      pending.push(call);
      if (!inFlight && !scheduled) {
        scheduled = true;
        setImmediate(() => void flush());
      }
    });
}
