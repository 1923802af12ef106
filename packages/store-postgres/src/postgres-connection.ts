import { SwitchboardError } from '@switchboard/core';
import {
  DatabaseError,
  type Pool,
  type PoolClient,
  type QueryResult,
  type QueryResultRow,
  TypeOverrides,
  types,
} from 'pg';

/** Values as the stores hand them out: BIGINT columns (ms since the epoch) as numbers, not strings. */
const ROW_TYPES = new TypeOverrides();
ROW_TYPES.setTypeParser(types.builtins.INT8, Number);

/**
 * SQLSTATE classes that blame the statement's values, not the server: 21 cardinality violation
 * (one upsert touching a row twice), 22 data exception, 23 integrity constraint violation, 54 program limit exceeded (an index row too large for one
 * record's values: writing it again would fail the same way). Every other server error (08 connection, 53 resources, 57
 * operator intervention, 25006 a read-only standby after a failover, 42501 a revoked permission,
 * 42P01 a missing table) says the database cannot serve us now: a caller keeping work until it
 * answers (the audit outbox) must keep it, not drop it as a bad record.
 */
const STATEMENT_ERROR_CLASSES = new Set(['21', '22', '23', '54']);

/**
 * PostgreSQL text cannot hold U+0000 (it refuses the statement), while platforms and HTTP
 * clients may send it; it is stored as U+FFFD, in lookups too, so keys holding it still match.
 */
function storable(value: unknown): unknown {
  if (typeof value === 'string') return value.replaceAll('\0', '\uFFFD');
  return Array.isArray(value) ? value.map(storable) : value;
}

/** Something that runs one statement: the pool, or the connection of a transaction. */
export interface Queryable {
  query<Row extends QueryResultRow>(text: string, values?: unknown[]): Promise<QueryResult<Row>>;
}

/** Statements over the pool, with connectivity failures turned into SB_STORE_UNAVAILABLE. */
export interface Sql extends Queryable {
  /** Runs `work` inside one transaction on one connection; commits when it resolves. */
  transaction<Result>(work: (tx: Queryable) => Promise<Result>): Promise<Result>;
}

/**
 * True when `error` says the database cannot serve us now rather than that a statement's values
 * are wrong. Errors not sent by the server (refused or reset connections, connect and query
 * timeouts, a pool already ended) all mean that.
 */
function isUnavailable(error: unknown): boolean {
  if (!(error instanceof DatabaseError)) return true;
  return !STATEMENT_ERROR_CLASSES.has(error.code?.slice(0, 2) ?? '');
}

/** `error` as callers should see it: SB_STORE_UNAVAILABLE (retryable) when the database is out of reach. */
export function toStoreError(error: unknown, target: string): unknown {
  if (!isUnavailable(error)) return error;
  const reason = error instanceof Error ? error.message || error.name : String(error);
  return new SwitchboardError('SB_STORE_UNAVAILABLE', {
    message: `PostgreSQL at ${target} is unavailable: ${reason}`,
    details: { target, ...(error instanceof DatabaseError ? { sqlstate: error.code } : {}) },
    retryable: true,
    cause: error,
  });
}

/** `Sql` over `pool`; `target` names the database in errors (never with credentials). */
export function createSql(pool: Pool, target: string): Sql {
  async function run<Row extends QueryResultRow>(
    on: Pool | PoolClient,
    text: string,
    values?: unknown[],
  ): Promise<QueryResult<Row>> {
    try {
      return await on.query<Row>({ text, values: values?.map(storable), types: ROW_TYPES });
    } catch (error) {
      throw toStoreError(error, target);
    }
  }

  return {
    query: (text, values) => run(pool, text, values),
    async transaction(work) {
      let client: PoolClient;
      try {
        client = await pool.connect();
      } catch (error) {
        throw toStoreError(error, target);
      }
      const tx: Queryable = { query: (text, values) => run(client, text, values) };
      try {
        await tx.query('BEGIN');
        const result = await work(tx);
        await tx.query('COMMIT');
        client.release();
        return result;
      } catch (error) {
        // Destroying the connection rolls back whatever it had begun, and a connection in an
        // unknown state never goes back to the pool.
        client.release(true);
        throw error;
      }
    },
  };
}
