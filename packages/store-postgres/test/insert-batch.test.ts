import { auditRecordFixture, messageStatusFixture } from '@switchboard/contracts';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { createInsertBatch } from '../src/insert-batch.js';
import { createPostgresAuditLog } from '../src/postgres-audit-log.js';
import { type Queryable, type Sql, createSql, toStoreError } from '../src/postgres-connection.js';
import { createPostgresMessageStatusStore } from '../src/postgres-message-status-store.js';
import {
  POSTGRES_URL,
  closedPostgresUrl,
  postgresReachable,
  queryPostgres,
  useSchema,
} from './postgres-harness.js';

const reachable = await postgresReachable();

/** The answered status of `id`, its reply waiting for delivery (not final). */
const pendingOf = (id: string) =>
  messageStatusFixture(id, {
    status: 'completed',
    replies: [{ text: id }],
    delivery: 'pending',
    updated_at: 2,
  });
/** The final status of `id`. */
const deliveredOf = (id: string, replies = 1) =>
  messageStatusFixture(id, {
    status: 'completed',
    replies: Array.from({ length: replies }, (_, index) => ({ text: `${id} ${index}` })),
    delivery: 'delivered',
    updated_at: 3,
  });

/** `sql` counting its statements, the most in flight at once, and calling `onStatement` as each starts. */
function countingSql(sql: Sql, onStatement: () => void = () => {}) {
  const counts = { statements: 0, inFlight: 0, mostInFlight: 0 };
  const counted: Sql = {
    async query(text, values) {
      counts.statements += 1;
      counts.inFlight += 1;
      counts.mostInFlight = Math.max(counts.mostInFlight, counts.inFlight);
      onStatement();
      try {
        return await sql.query(text, values);
      } finally {
        counts.inFlight -= 1;
      }
    },
    transaction: (work) => sql.transaction(work),
  };
  return { sql: counted, counts };
}

/** What a call settled with: 'written', or its error. */
const outcomeOf = (write: Promise<void>) =>
  write.then(
    () => 'written',
    (err: unknown) => err,
  );

describe.skipIf(!reachable)('writes issued together', () => {
  const schema = useSchema();
  const pool = new pg.Pool({ connectionString: POSTGRES_URL, max: 4 });
  afterAll(() => pool.end());

  /** The stores over a migrated schema, through a counting `Sql`. */
  async function openStores(onStatement?: () => void) {
    await schema.open();
    const { sql, counts } = countingSql(createSql(pool, 'test'), onStatement);
    const schemaName = pg.escapeIdentifier(schema.name);
    return {
      counts,
      statuses: createPostgresMessageStatusStore(sql, schemaName, Date.now),
      auditLog: createPostgresAuditLog(sql, schemaName),
    };
  }

  const storedIds = async (table: string) =>
    (await queryPostgres<{ id: string }>(`SELECT id FROM ${schema.name}.${table} ORDER BY id`)).map(
      (row) => row.id,
    );

  describe('when many puts and appends are issued in one tick', () => {
    it('writes them with one statement per table, every row', async () => {
      const { statuses, auditLog, counts } = await openStores();
      const ids = Array.from({ length: 50 }, (_, index) => `m${String(index).padStart(2, '0')}`);
      await Promise.all([
        ...ids.map((id) => statuses.put(deliveredOf(id))),
        ...ids.map((_, index) => auditLog.append(auditRecordFixture(index))),
      ]);
      expect(counts.statements).toBe(2);
      expect(await storedIds('message_status')).toEqual(ids);
      expect(await storedIds('audit')).toEqual(ids.map((_, index) => auditRecordFixture(index).id));
    });

    it('writes each message of a burst (pending status, then record and final status) in three statements in all', async () => {
      const { statuses, auditLog, counts } = await openStores();
      const ids = Array.from({ length: 50 }, (_, index) => `m${index}`);
      await Promise.all(
        ids.map(async (id, index) => {
          await statuses.put(pendingOf(id));
          await Promise.all([auditLog.append(auditRecordFixture(index)), statuses.put(deliveredOf(id))]);
        }),
      );
      expect(counts.statements).toBe(3);
      for (const id of ids) expect(await statuses.get(id)).toEqual(deliveredOf(id));
    });

    it('writes more rows than one statement holds (500) with a second statement', async () => {
      const { auditLog, counts } = await openStores();
      await Promise.all(
        Array.from({ length: 600 }, (_, index) => auditLog.append(auditRecordFixture(index))),
      );
      expect(counts.statements).toBe(2);
      expect(await storedIds('audit')).toHaveLength(600);
    });
  });

  describe('when a row past the first holds U+0000, which PostgreSQL text cannot', () => {
    it('stores it as U+FFFD, as a statement of its own would', async () => {
      const { auditLog, counts } = await openStores();
      const record = auditRecordFixture(2, { text: 'a\0b' });
      await Promise.all([auditLog.append(auditRecordFixture(1)), auditLog.append(record)]);
      expect(counts.statements).toBe(1);
      expect((await auditLog.query({ limit: 1 })).items).toEqual([{ ...record, text: 'a\uFFFDb' }]);
    });
  });

  describe('when calls come while a statement is in flight', () => {
    it('keeps them for the next statement: one in flight per table', async () => {
      let issueMore = () => {};
      const { auditLog, counts } = await openStores(() => issueMore());
      const more: Promise<void>[] = [];
      issueMore = () => {
        issueMore = () => {};
        for (let index = 10; index < 20; index += 1) more.push(auditLog.append(auditRecordFixture(index)));
      };
      await Promise.all(Array.from({ length: 10 }, (_, index) => auditLog.append(auditRecordFixture(index))));
      await Promise.all(more);
      expect(counts).toMatchObject({ statements: 2, mostInFlight: 1 });
      expect(await storedIds('audit')).toHaveLength(20);
    });
  });

  describe('when one statement would hold two puts of one id', () => {
    it('stores the one sequential puts would leave, in one statement, and resolves both callers', async () => {
      const { statuses, counts } = await openStores();
      await Promise.all([
        statuses.put(pendingOf('m1')),
        statuses.put(deliveredOf('m1')),
        statuses.put(deliveredOf('m2')),
        statuses.put(pendingOf('m2')),
      ]);
      expect(counts.statements).toBe(1);
      expect(await statuses.get('m1')).toEqual(deliveredOf('m1'));
      expect(await statuses.get('m2')).toEqual(deliveredOf('m2'));
    });

    it('writes them in call order with two statements when which stays depends on the stored one', async () => {
      const { statuses, counts } = await openStores();
      // m1: a replay's queued status (higher version, not final) before the first run's final
      // one; m2 the same over a final status already stored, the final one with a later reply.
      await statuses.put(messageStatusFixture('m1', { status: 'running' }));
      await statuses.put(deliveredOf('m2'));
      const replayQueued = (id: string) => messageStatusFixture(id, { generation: 1, status: 'queued' });
      const before = counts.statements;
      await Promise.all([
        statuses.put(replayQueued('m1')),
        statuses.put(deliveredOf('m1')),
        statuses.put(replayQueued('m2')),
        statuses.put(deliveredOf('m2', 2)),
      ]);
      expect(counts.statements - before).toBe(2);
      expect(await statuses.get('m1')).toEqual(replayQueued('m1'));
      expect(await statuses.get('m2')).toEqual(deliveredOf('m2', 2));
    });

    it('lets no later put of an id overtake an earlier one that waits for the next statement', async () => {
      const { statuses } = await openStores();
      const ofGeneration = (generation: number, overrides = {}) =>
        messageStatusFixture('m1', { generation, ...overrides });
      await statuses.put(ofGeneration(1));
      // In order: the first run's final status is refused (older generation), the second replay's
      // queued one stored, the first replay's final one refused (older than it).
      const secondReplayQueued = ofGeneration(2);
      await Promise.all([
        statuses.put(deliveredOf('m1')),
        statuses.put(secondReplayQueued),
        statuses.put(ofGeneration(1, { status: 'completed', delivery: 'delivered', updated_at: 3 })),
      ]);
      expect(await statuses.get('m1')).toEqual(secondReplayQueued);
    });

    it('keeps the first of two records of one id, as a second insert would', async () => {
      const { auditLog, counts } = await openStores();
      const first = auditRecordFixture(1);
      await Promise.all([auditLog.append(first), auditLog.append({ ...first, text: 'second' })]);
      expect(counts.statements).toBe(1);
      expect((await auditLog.query({ limit: 10 })).items).toEqual([first]);
    });
  });

  describe('when PostgreSQL refuses the value of one record in the statement', () => {
    it('rejects only that call with the database error and writes the others', async () => {
      const { statuses, auditLog } = await openStores();
      // The same status written again later: of equal rank, so the later one stays.
      const rewritten = { ...deliveredOf('m1'), updated_at: 4 };
      const [badRecord, ...records] = await Promise.all([
        outcomeOf(auditLog.append(auditRecordFixture(0, { at: 1.5 }))),
        ...[1, 2, 3].map((index) => outcomeOf(auditLog.append(auditRecordFixture(index)))),
      ]);
      const [badStatus, ...puts] = await Promise.all([
        outcomeOf(statuses.put(messageStatusFixture('m0', { updated_at: 1.5 }))),
        outcomeOf(statuses.put(deliveredOf('m1'))),
        outcomeOf(statuses.put(rewritten)),
        outcomeOf(statuses.put(deliveredOf('m2'))),
      ]);
      expect(badRecord).toMatchObject({ code: '22P02' });
      expect(records).toEqual(['written', 'written', 'written']);
      expect(badStatus).toMatchObject({ code: '22P02' });
      expect(puts).toEqual(['written', 'written', 'written']);
      expect(await storedIds('audit')).toEqual([1, 2, 3].map((index) => auditRecordFixture(index).id));
      expect(await storedIds('message_status')).toEqual(['m1', 'm2']);
      expect(await statuses.get('m1')).toEqual(rewritten);
    });

    it('writes the calls merged into the refused row one each: an earlier good put of its id is stored', async () => {
      const { statuses } = await openStores();
      const [good, bad] = await Promise.all([
        outcomeOf(statuses.put(pendingOf('m1'))),
        // Replaces the one before it (final), with a value PostgreSQL refuses.
        outcomeOf(statuses.put({ ...deliveredOf('m1'), updated_at: 1.5 })),
      ]);
      expect(good).toBe('written');
      expect(bad).toMatchObject({ code: '22P02' });
      expect(await statuses.get('m1')).toEqual(pendingOf('m1'));
    });

    it('finds it by writing halves of the statement again: a few statements, not one per row', async () => {
      const { auditLog, counts } = await openStores();
      const outcomes = await Promise.all(
        Array.from({ length: 16 }, (_, index) =>
          outcomeOf(auditLog.append(auditRecordFixture(index, index === 5 ? { at: 1.5 } : {}))),
        ),
      );
      expect(outcomes.filter((outcome) => outcome !== 'written')).toEqual([
        expect.objectContaining({ code: '22P02' }),
      ]);
      expect(outcomes[5]).not.toBe('written');
      expect(await storedIds('audit')).toHaveLength(15);
      // The statement, then two halves at each of four levels down to the refused row.
      expect(counts.statements).toBe(1 + 2 * 4);
    });
  });

  describe('when the rows together carry more than 4 MiB of text', () => {
    it('writes them with more statements, a row larger than that alone', async () => {
      const { auditLog, counts } = await openStores();
      const textOf = (characters: number) => 'x'.repeat(characters);
      await Promise.all([
        auditLog.append(auditRecordFixture(0, { text: textOf(1_500_000) })),
        auditLog.append(auditRecordFixture(1, { text: textOf(1_500_000) })),
        auditLog.append(auditRecordFixture(2, { text: textOf(1_500_000) })),
        auditLog.append(auditRecordFixture(3, { text: textOf(5_000_000) })),
      ]);
      expect(counts.statements).toBe(3);
      expect(await storedIds('audit')).toEqual([0, 1, 2, 3].map((index) => auditRecordFixture(index).id));
    });
  });

  /** Resolves once `count` statements on the schema's tables wait for a row lock. */
  async function untilWaitingOnLocks(count: number) {
    for (;;) {
      const [row] = await queryPostgres<{ waiting: number }>(
        `SELECT count(*)::int AS waiting FROM pg_stat_activity
         WHERE wait_event_type = 'Lock' AND position($1 in query) > 0`,
        [`${pg.escapeIdentifier(schema.name)}.`],
      );
      if (row!.waiting >= count) return;
      await new Promise((resolve) => setImmediate(resolve));
    }
  }

  /** Begins a transaction holding the row lock of the status of `id`; answers its connection. */
  async function lockStatus(id: string) {
    const holder = new pg.Client({ connectionString: POSTGRES_URL });
    await holder.connect();
    await holder.query('BEGIN');
    await holder.query(
      `SELECT 1 FROM ${pg.escapeIdentifier(schema.name)}.message_status WHERE id = $1 FOR UPDATE`,
      [id],
    );
    return holder;
  }

  describe('when two replicas write overlapping ids issued in opposite orders', () => {
    it('writes every row without a deadlock: both statements lock rows in key order', async () => {
      const replicaA = await openStores();
      const replicaB = await openStores();
      await Promise.all(['x', 'y', 'z'].map((id) => replicaA.statuses.put(pendingOf(id))));
      const before = replicaA.counts.statements;
      // Holding z keeps replica A's statement waiting in the middle of its rows.
      const holder = await lockStatus('z');
      try {
        const writesA = ['x', 'z', 'y'].map((id) => outcomeOf(replicaA.statuses.put(deliveredOf(id))));
        await untilWaitingOnLocks(1);
        const writesB = ['y', 'x'].map((id) => outcomeOf(replicaB.statuses.put(deliveredOf(id, 2))));
        await untilWaitingOnLocks(2);
        await holder.query('COMMIT');
        expect(await Promise.all([...writesA, ...writesB])).toEqual(Array(5).fill('written'));
        // One statement each: none was rolled back and run again.
        expect(replicaA.counts.statements - before + replicaB.counts.statements).toBe(2);
      } finally {
        await holder.end();
      }
    });
  });

  describe('when a row is locked by a transaction that does not end', () => {
    it('fails the statement waiting for it, and the calls behind it, by the timeout of the server before the client gives up; later calls are written', async () => {
      const queryTimeoutMs = 1000;
      const store = await schema.open({ queryTimeoutMs });
      await store.statuses.put(pendingOf('x'));
      const holder = await lockStatus('x');
      try {
        const blocked = outcomeOf(store.statuses.put(deliveredOf('x')));
        await untilWaitingOnLocks(1);
        const behind = outcomeOf(store.statuses.put(deliveredOf('y')));
        const timedOut = {
          code: 'SB_STORE_UNAVAILABLE',
          // The server's own lock timeout: a timeout of the client carries no SQLSTATE.
          details: { sqlstate: '55P03' },
        };
        expect(await blocked).toMatchObject(timedOut);
        expect(await behind).toMatchObject(timedOut);
        expect(await outcomeOf(store.statuses.put(deliveredOf('y')))).toBe('written');
      } finally {
        await holder.query('ROLLBACK');
        await holder.end();
      }
    });

    it('waits for the lock as long as it is held when the store has no query timeout (0), then writes', async () => {
      const store = await schema.open({ queryTimeoutMs: 0 });
      await store.statuses.put(pendingOf('x'));
      const holder = await lockStatus('x');
      try {
        const blocked = outcomeOf(store.statuses.put(deliveredOf('x')));
        await untilWaitingOnLocks(1);
        await holder.query('ROLLBACK');
        expect(await blocked).toBe('written');
      } finally {
        await holder.end();
      }
    });
  });
});

describe('writes issued together, when the batch itself fails', () => {
  /** The answer of a statement that wrote its row. */
  const inserted = { rows: [], rowCount: 1, command: 'INSERT', oid: 0, fields: [] };
  const rowsOf = (sql: Queryable, keyOf: (id: string) => string = (id) => id) =>
    createInsertBatch<string>(sql, {
      table: 'rows',
      columns: ['id'],
      onConflict: 'ON CONFLICT (id) DO NOTHING',
      valuesOf: (id) => [id],
      keyOf,
    });

  it.each([
    ['a deadlock', '40P01', 'deadlock detected'],
    ['a serialization failure', '40001', 'could not serialize access due to concurrent update'],
  ])('runs a statement PostgreSQL rolled back for %s once more', async (_name, code, message) => {
    const rolledBack = Object.assign(new pg.DatabaseError(message, 0, 'error'), { code });
    let statements = 0;
    const write = rowsOf({
      async query() {
        statements += 1;
        if (statements === 1) throw toStoreError(rolledBack, 'test');
        return inserted;
      },
    });
    expect(await outcomeOf(write('a'))).toBe('written');
    expect(statements).toBe(2);
  });

  it('gives a statement rolled back twice up once: its calls fail as unavailable, no third run', async () => {
    const deadlock = Object.assign(new pg.DatabaseError('deadlock detected', 0, 'error'), { code: '40P01' });
    let statements = 0;
    const write = rowsOf({
      async query() {
        statements += 1;
        throw toStoreError(deadlock, 'test');
      },
    });
    expect(await outcomeOf(write('a'))).toMatchObject({ code: 'SB_STORE_UNAVAILABLE' });
    expect(statements).toBe(2);
  });

  it('rejects the calls of a statement it could not form, and writes those issued later', async () => {
    const fault = new Error('no key');
    const write = rowsOf({ query: async () => inserted }, (id) => {
      if (id === 'bad') throw fault;
      return id;
    });
    expect(await Promise.all([outcomeOf(write('a')), outcomeOf(write('bad'))])).toEqual([fault, fault]);
    expect(await outcomeOf(write('b'))).toBe('written');
  });
});

describe('writes issued together, when PostgreSQL is out of reach', () => {
  it('rejects every call of the statement and those that waited behind it with SB_STORE_UNAVAILABLE', async () => {
    const pool = new pg.Pool({ connectionString: await closedPostgresUrl() });
    const waited: Promise<unknown>[] = [];
    let issueMore = () => {};
    const { sql, counts } = countingSql(createSql(pool, 'closed'), () => issueMore());
    const auditLog = createPostgresAuditLog(sql, 'closed');
    issueMore = () => {
      issueMore = () => {};
      for (let index = 3; index < 6; index += 1)
        waited.push(outcomeOf(auditLog.append(auditRecordFixture(index))));
    };
    try {
      const outcomes = await Promise.all(
        [0, 1, 2].map((index) => outcomeOf(auditLog.append(auditRecordFixture(index)))),
      );
      outcomes.push(...(await Promise.all(waited)));
      expect(outcomes).toHaveLength(6);
      for (const outcome of outcomes) expect(outcome).toMatchObject({ code: 'SB_STORE_UNAVAILABLE' });
      expect(counts.statements).toBe(1);
    } finally {
      await pool.end();
    }
  });
});
