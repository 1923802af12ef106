import { isSwitchboardError } from '@switchboard/core';
import { POSTGRES_URL } from '@switchboard/testkit/postgres';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { createSql } from '../src/postgres-connection.js';
import { postgresReachable } from './postgres-harness.js';

const reachable = await postgresReachable();

describe.skipIf(!reachable)('errors of statements the database refuses', () => {
  const pool = new pg.Pool({ connectionString: POSTGRES_URL, max: 1 });
  afterAll(() => pool.end());
  const sql = createSql(pool, '127.0.0.1:5432/test');
  const failureOf = (text: string) =>
    sql.query(text).then(
      () => undefined,
      (err: unknown) => err,
    );

  it('reports a server that cannot serve the statement (missing table, read-only) as unavailable, so work waits', async () => {
    const missing = await failureOf('SELECT * FROM switchboard_no_such_table');
    expect(isSwitchboardError(missing, 'SB_STORE_UNAVAILABLE')).toBe(true);
    expect(missing).toMatchObject({ details: { sqlstate: '42P01' } });
    const readOnly = await sql
      .transaction(async (tx) => {
        await tx.query('SET TRANSACTION READ ONLY');
        await tx.query('CREATE TABLE switchboard_read_only (id int)');
      })
      .then(
        () => undefined,
        (err: unknown) => err,
      );
    expect(readOnly).toMatchObject({ code: 'SB_STORE_UNAVAILABLE', details: { sqlstate: '25006' } });
  });

  it('passes a value the database refuses (a data exception) on as it is', async () => {
    const division = await failureOf('SELECT 1 / 0');
    expect(division).toBeInstanceOf(pg.DatabaseError);
    expect((division as pg.DatabaseError).code).toBe('22012');
  });

  it('passes a cardinality violation (a statement touching one row twice) on as it is', async () => {
    const twice = await failureOf('SELECT (SELECT x FROM (VALUES (1), (2)) AS v (x))');
    expect(twice).toBeInstanceOf(pg.DatabaseError);
    expect((twice as pg.DatabaseError).code).toBe('21000');
  });

  it('passes a statement past a program limit (class 54) on as it is: writing it again fails the same way', async () => {
    const tooMany = await failureOf(`SELECT concat(${Array.from({ length: 101 }, () => "'x'").join(', ')})`);
    expect(tooMany).toBeInstanceOf(pg.DatabaseError);
    expect((tooMany as pg.DatabaseError).code).toBe('54023');
  });
});
