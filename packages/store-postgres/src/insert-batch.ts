import { isSwitchboardError } from '@switchboard/core';
import type { Queryable } from './postgres-connection.js';

/** Most rows one statement writes: a modest statement, far below PostgreSQL's 65535 parameters. */
const MAX_ROWS = 500;
/** Bind parameters one statement may carry (the protocol counts them in 16 bits). */
const MAX_PARAMETERS = 65_535;
/** Most characters of text values one statement carries (a larger row goes alone): bounds its memory and time on both ends. */
const MAX_CHARACTERS = 4 * 1024 * 1024;

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
   * The key of the conflict. A statement writes its rows sorted by it (stably: of two rows of one
   * key the earlier stays first), so the statements of every replica lock rows in one order and
   * cannot deadlock each other.
   */
  keyOf(row: Row): string;
  /**
   * For an `ON CONFLICT DO UPDATE`, which cannot touch one row twice in a statement: whether a
   * row written after `held` (of the same key) takes its place. Two rows of one key share a
   * statement as the one of them that sequential upserts would leave; when neither replaces the
   * other, which one stays depends on what is stored, so the later waits for the next statement.
   * A call whose row gave way settles with the kept one (even had PostgreSQL refused its own
   * values: what is stored is the same).
   */
  replaces?(held: Row, incoming: Row): boolean;
}

/** One call waiting for its row. */
interface PendingInsert<Row> {
  row: Row;
  values: unknown[];
  resolve(): void;
  reject(error: unknown): void;
}

/** A row of a statement and the calls (in call order) that settle with it. */
interface StatementRow<Row> {
  kept: PendingInsert<Row>;
  calls: PendingInsert<Row>[];
}

const isUnavailable = (error: unknown) => isSwitchboardError(error, 'SB_STORE_UNAVAILABLE');

/**
 * SQLSTATE class 40 (deadlock detected, serialization failure): PostgreSQL rolled the statement
 * back for running beside another one, and the same statement again will most likely pass.
 */
const isTransactionRollback = (error: unknown) =>
  isUnavailable(error) &&
  String((error as { details?: { sqlstate?: unknown } }).details?.sqlstate ?? '').startsWith('40');

/** Characters of a row's text values: what a statement's size is counted in. */
const charactersOf = (values: readonly unknown[]) =>
  values.reduce<number>((sum, value) => sum + (typeof value === 'string' ? value.length : 0), 0);

const byKey = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/**
 * Writes rows into one table, the rows of many calls in one multi-row `INSERT … VALUES (…), (…)
 * <onConflict>`, like a group commit: the calls of one turn of the event loop (`setImmediate`)
 * form a statement, at most one statement per batch is in flight, and the calls made meanwhile
 * form the next as soon as it answers. Rows go in key order (no deadlock between replicas); a
 * statement PostgreSQL rolled back for a conflict with another (SQLSTATE class 40) runs once
 * more. A statement error (a value PostgreSQL refuses: `toStoreError` passes it on) writes each
 * half of the statement's rows again, halving down to the refused row, whose calls alone fail,
 * while good rows are written. An unavailable database (SB_STORE_UNAVAILABLE) rejects the
 * statement's calls and those that waited behind it, which would otherwise each wait out another
 * timeout in turn. Nothing is queued beyond the calls awaiting their promise.
 */
export function createInsertBatch<Row>(
  sql: Queryable,
  options: InsertBatchOptions<Row>,
): (row: Row) => Promise<void> {
  const { table, columns, onConflict, valuesOf, keyOf, replaces } = options;
  const maxRows = Math.min(MAX_ROWS, Math.floor(MAX_PARAMETERS / columns.length));
  const head = `INSERT INTO ${table} (${columns.join(', ')}) VALUES`;
  let pending: PendingInsert<Row>[] = [];
  let scheduled = false;
  let inFlight = false;

  async function insert(rows: readonly StatementRow<Row>[]): Promise<void> {
    const sorted = rows.map(({ kept }) => kept).sort((a, b) => byKey(keyOf(a.row), keyOf(b.row)));
    const tuples = sorted.map(
      (_, row) => `(${columns.map((_, column) => `$${row * columns.length + column + 1}`).join(', ')})`,
    );
    const run = () =>
      sql.query(
        `${head} ${tuples.join(', ')} ${onConflict}`,
        sorted.flatMap(({ values }) => values),
      );
    try {
      await run();
    } catch (error) {
      if (!isTransactionRollback(error)) throw error;
      await run();
    }
  }

  /**
   * Takes the next statement's calls off `pending`, in call order, as the rows they write: a call
   * of a key already in the statement merges into its row, or, when neither replaces the other,
   * waits with every later call of its key. A statement ends at `maxRows` rows or past
   * `MAX_CHARACTERS` (a larger row alone).
   */
  function take(): StatementRow<Row>[] {
    const rows: StatementRow<Row>[] = [];
    const rowOfKey = new Map<string, StatementRow<Row>>();
    const waiting = new Set<string>();
    const left: PendingInsert<Row>[] = [];
    let characters = 0;
    let index = 0;
    for (; index < pending.length; index += 1) {
      const call = pending[index]!;
      const key = keyOf(call.row);
      const held = replaces === undefined ? undefined : rowOfKey.get(key);
      // A call behind one that waits waits too, merging with nothing: written in call order.
      if (waiting.has(key) || (held !== undefined && !mergeInto(held, call))) {
        waiting.add(key);
        left.push(call);
        continue;
      }
      if (held !== undefined) continue;
      const size = charactersOf(call.values);
      if (rows.length === maxRows || (rows.length > 0 && characters + size > MAX_CHARACTERS)) break;
      characters += size;
      const row = { kept: call, calls: [call] };
      rowOfKey.set(key, row);
      rows.push(row);
    }
    pending = [...left, ...pending.slice(index)];
    return rows;

    /** Keeps whichever of `held` and `call` sequential upserts would leave; false when that depends on what is stored. */
    function mergeInto(held: StatementRow<Row>, call: PendingInsert<Row>): boolean {
      if (replaces!(held.kept.row, call.row)) {
        characters += charactersOf(call.values) - charactersOf(held.kept.values);
        held.kept = call;
      } else if (!replaces!(call.row, held.kept.row)) return false;
      held.calls.push(call);
      return true;
    }
  }

  /**
   * Writes `rows` and settles their calls; on a statement error each half again, down to the
   * refused row. Answers the error of an unavailable database, which has rejected the calls not
   * written.
   */
  async function write(rows: StatementRow<Row>[]): Promise<unknown> {
    try {
      await insert(rows);
      for (const { calls } of rows) for (const call of calls) call.resolve();
      return undefined;
    } catch (error) {
      if (isUnavailable(error)) return rejectAll(callsOf(rows), error);
      if (rows.length === 1) return writeEach(rows[0]!.calls, error);
    }
    const half = Math.ceil(rows.length / 2);
    const unavailable = await write(rows.slice(0, half));
    if (unavailable !== undefined) return rejectAll(callsOf(rows.slice(half)), unavailable);
    return write(rows.slice(half));
  }

  /**
   * The calls of one refused row: a lone call is refused; calls merged into the row are written
   * one statement each, in call order, as they would have been without the batch (an earlier
   * one may be good).
   */
  async function writeEach(calls: readonly PendingInsert<Row>[], error: unknown): Promise<unknown> {
    if (calls.length === 1) return void rejectAll(calls, error);
    for (const [index, call] of calls.entries()) {
      const unavailable = await write([{ kept: call, calls: [call] }]);
      if (unavailable !== undefined) return rejectAll(calls.slice(index + 1), unavailable);
    }
    return undefined;
  }

  const callsOf = (rows: readonly StatementRow<Row>[]) => rows.flatMap(({ calls }) => calls);

  /** Rejects `calls` with `error`, and answers it. */
  function rejectAll(calls: readonly PendingInsert<Row>[], error: unknown): unknown {
    for (const call of calls) call.reject(error);
    return error;
  }

  async function flush(): Promise<void> {
    scheduled = false;
    inFlight = true;
    let rows: StatementRow<Row>[] = [];
    try {
      rows = take();
      const unavailable = await write(rows);
      if (unavailable !== undefined) rejectAll(pending.splice(0), unavailable);
    } catch (error) {
      // A fault of the batch itself: its calls and those waiting fail rather than wait forever
      // (a call already settled ignores the rejection).
      rejectAll([...callsOf(rows), ...pending.splice(0)], error);
    } finally {
      inFlight = false;
    }
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
