import { randomUUID } from 'node:crypto';
import type { AuditLog, AuditRecord, MessageStatus, MessageStatusStore } from '@switchboard/core';
import { auditRecordFixture, messageStatusStoreContract } from '@switchboard/contracts';
import { createPostgresStore, type PostgresStore } from '@switchboard/store-postgres';
import { eventually } from '@switchboard/testkit/eventually';
import { postgresReachable, startPrivatePostgres } from '@switchboard/testkit/postgres';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  type AuditOutbox,
  type AuditOutboxOptions,
  createAuditOutbox,
  FAIL_FAST_OPTIONS,
} from '../src/index.js';
import { auditOutboxStatuses } from './audit-outbox-statuses.js';
import { REDIS_URL, redisReachable, removePoolKeys } from './redis-harness.js';

const reachable = (await redisReachable()) && (await postgresReachable());

const records = (count: number, from = 1): AuditRecord[] =>
  Array.from({ length: count }, (_, index) => auditRecordFixture(from + index));

/** The real store, counting the appends that reach it per id (the outbox's drainers' writes). */
function counting(inner: AuditLog) {
  const appends = new Map<string, number>();
  const log: AuditLog = {
    ...inner,
    async append(record) {
      await inner.append(record);
      appends.set(record.id, (appends.get(record.id) ?? 0) + 1);
    },
  };
  return { log, appends };
}

describe.skipIf(!reachable)('the audit outbox as a status store', () => {
  messageStatusStoreContract(
    'redis audit outbox over postgres',
    auditOutboxStatuses(
      () => REDIS_URL,
      (prefix) => removePoolKeys(REDIS_URL, prefix),
    ),
  );
});

describe.skipIf(!reachable)('createAuditOutbox', () => {
  let database: Awaited<ReturnType<typeof startPrivatePostgres>>;
  let prefix: string;
  let redis: Redis;
  const opened: AuditOutbox[] = [];
  const stores: PostgresStore[] = [];

  beforeAll(async () => {
    database = await startPrivatePostgres();
  }, 30_000);
  afterAll(() => database?.remove());

  beforeEach(async () => {
    prefix = `sb-test-${randomUUID()}`;
    redis = new Redis(REDIS_URL, FAIL_FAST_OPTIONS);
    await redis.connect();
  });
  afterEach(async () => {
    for (const outbox of opened.splice(0)) await outbox.shutdown();
    for (const store of stores.splice(0)) await store.close();
    redis.disconnect();
    await removePoolKeys(REDIS_URL, prefix);
  });

  /** A PostgreSQL store on its own schema of the private database. */
  async function openStore() {
    const schema = `s_${randomUUID().replaceAll('-', '')}`;
    const store = await createPostgresStore({ url: database.url, schema, connectTimeoutMs: 500 });
    stores.push(store);
    return store;
  }

  async function open(options: Partial<AuditOutboxOptions> & { inner: AuditLog }) {
    const outbox = await createAuditOutbox({ url: REDIS_URL, prefix, drainEveryMs: 50, ...options });
    opened.push(outbox);
    return outbox;
  }

  const outboxLength = () => redis.llen(`{${prefix}}:audit-outbox`);

  async function storedIds(store: PostgresStore): Promise<string[]> {
    const { items } = await store.auditLog.query({ limit: 10_000 });
    return items.map((item) => item.id).sort();
  }

  describe('when the replica shuts down while an append waits on an unreachable PostgreSQL', () => {
    it('lets the append reach the outbox before it closes Redis', async () => {
      const store = await openStore();
      const outbox = await createAuditOutbox({
        url: REDIS_URL,
        prefix,
        drainEveryMs: 60_000,
        inner: store.auditLog,
      });
      await database.stop();
      try {
        const write = outbox.append(auditRecordFixture(1));
        await outbox.shutdown();
        await expect(write).resolves.toBeUndefined();
        expect(await outboxLength()).toBe(1);
      } finally {
        await database.start();
      }
    });
  });

  describe('when PostgreSQL stops while records are written at a steady pace', () => {
    it('keeps them in Redis and, once PostgreSQL is back, stores every record in it exactly once', async () => {
      const store = await openStore();
      const outbox = await open({ inner: store.auditLog });
      const written = records(200);
      try {
        for (const [index, record] of written.entries()) {
          if (index === 50) await database.stop();
          if (index === 150) {
            // The 100 records written meanwhile wait in Redis: in the outbox or this replica's batch.
            const processing = `{${prefix}}:audit-outbox:processing:${outbox.replicaId}`;
            expect((await outboxLength()) + (await redis.llen(processing))).toBe(100);
            await database.start();
          }
          await outbox.append(record);
          await new Promise((resolve) => setTimeout(resolve, 5));
        }
        await eventually(
          async () => (await storedIds(store)).length === 200,
          20_000,
          'all 200 records in postgresql',
        );
      } finally {
        await database.start().catch(() => {});
      }
      expect(await storedIds(store)).toEqual(written.map((record) => record.id).sort());
      expect(await outboxLength()).toBe(0);
    }, 60_000);
  });

  describe('when final statuses are written while PostgreSQL is away', () => {
    it('keeps them readable and in order with the records, and stores the newest of each once it is back', async () => {
      const store = await openStore();
      const outbox = await open({ inner: store.auditLog, statuses: store.statuses, drainEveryMs: 60_000 });
      const statuses = outbox.statuses as MessageStatusStore;
      const status = (id: string, state: MessageStatus['status'], at: number): MessageStatus => ({
        id,
        channel: 'api',
        tenant: 'default',
        generation: 0,
        status: state,
        pipeline: 'p',
        rule: null,
        turn: 't',
        replies: state === 'completed' ? [{ text: `reply to ${id}` }] : [],
        delivery: null,
        error: null,
        trace_id: null,
        updated_at: at,
      });
      await database.stop();
      try {
        await statuses.put(status('m1', 'running', 1));
        await outbox.append(auditRecordFixture(1));
        await statuses.put(status('m1', 'completed', 2));
        await statuses.put(status('m2', 'dead_lettered', 3));
        expect(await outboxLength()).toBe(4);
        // Readable while they wait, PostgreSQL down or not.
        expect(await statuses.get('m1')).toEqual(status('m1', 'completed', 2));
        expect(await statuses.get('m2')).toEqual(status('m2', 'dead_lettered', 3));
      } finally {
        await database.start();
      }
      // Its replay's status reaches PostgreSQL before the outbox drains: the drain must not undo it.
      const replayed = { ...status('m2', 'completed', 4), generation: 1 };
      await eventually(
        () =>
          store.statuses.put(replayed).then(
            () => true,
            () => false,
          ),
        20_000,
        'PostgreSQL answers again',
      );
      // Read before the drain: the newer of the waiting copy and PostgreSQL's.
      expect(await statuses.get('m2')).toEqual(replayed);
      expect(await statuses.get('m1')).toEqual(status('m1', 'completed', 2));
      await eventually(
        async () => {
          await outbox.drain();
          return (await outboxLength()) === 0;
        },
        20_000,
        'the outbox drained',
      );
      expect(await store.statuses.get('m1')).toEqual(status('m1', 'completed', 2));
      expect(await store.statuses.get('m2')).toEqual(replayed);
      expect(await statuses.get('m2')).toEqual(replayed);
      expect(await redis.hlen(`{${prefix}}:audit-outbox:statuses`)).toBe(0);
      expect(await storedIds(store)).toEqual([auditRecordFixture(1).id]);
    }, 60_000);
  });

  describe('when statuses of one message reach the outbox in any order (replicas, PostgreSQL away)', () => {
    const answered = (
      id: string,
      delivery: MessageStatus['delivery'],
      at: number,
      text = 'hello',
    ): MessageStatus => ({
      id,
      channel: 'api',
      tenant: 'default',
      generation: 0,
      status: 'completed',
      pipeline: 'p',
      rule: null,
      turn: 't',
      replies: delivery === 'delivered' ? [{ text }] : [],
      delivery,
      error: null,
      trace_id: null,
      updated_at: at,
    });
    const statusesOf = (outbox: AuditOutbox | undefined) => outbox?.statuses as MessageStatusStore;
    const waitingKeys = () => [`{${prefix}}:audit-outbox:statuses`, `{${prefix}}:audit-outbox:status-ranks`];

    it("keeps another replica's final one readable over a late pending one, and stores it once PostgreSQL is back", async () => {
      const store = await openStore();
      const [first, second] = await Promise.all(
        ['a', 'b'].map((replicaId) =>
          open({ inner: store.auditLog, statuses: store.statuses, drainEveryMs: 60_000, replicaId }),
        ),
      );
      // Its reply ends in half an emoji: JSON may carry a lone surrogate, which Redis' cjson refuses.
      const final = answered('m1', 'delivered', 5, 'cut \ud83d');
      await database.stop();
      try {
        await statusesOf(second).put(final);
        // Stamped when the replies were stored: the same millisecond, then an older one.
        await statusesOf(first).put(answered('m1', 'pending', 5));
        await statusesOf(first).put(answered('m1', 'pending', 4));
        expect(await statusesOf(first).get('m1')).toEqual(final);
        expect(await statusesOf(second).get('m1')).toEqual(final);
      } finally {
        await database.start();
      }
      await eventually(
        async () => {
          await first?.drain().catch(() => 0);
          return (await outboxLength()) === 0;
        },
        20_000,
        'the outbox drained',
      );
      expect(await store.statuses.get('m1')).toEqual(final);
      for (const key of waitingKeys()) expect(await redis.hlen(key)).toBe(0);
    }, 60_000);

    it("keeps the copy put would keep, by version, whatever the writers' clocks say", async () => {
      const store = await openStore();
      const outbox = await open({ inner: store.auditLog, statuses: store.statuses, drainEveryMs: 60_000 });
      const statuses = statusesOf(outbox);
      // A replica whose clock runs 20 s ahead stamps its statuses later than the others'.
      const ahead = 20_000;
      const apology = (status: MessageStatus): MessageStatus => ({
        ...status,
        replies: [...status.replies, { text: 'sorry' }],
      });
      await database.stop();
      try {
        await statuses.put(answered('pending first', 'pending', 4 + ahead));
        await statuses.put(answered('pending first', 'delivered', 5));
        await statuses.put(answered('final first', 'delivered', 5));
        await statuses.put(answered('final first', 'pending', 4 + ahead));
        await statuses.put(answered('same time', 'delivered', 5));
        await statuses.put(answered('same time', 'pending', 5));
        // A dead-letter reply appended to the final status, then that status pushed again late.
        await statuses.put(apology(answered('apology', 'failed', 5)));
        await statuses.put(answered('apology', 'failed', 6 + ahead));
        // A replay's final status, then the first run's, stamped later.
        await statuses.put({ ...answered('replayed', 'delivered', 5), generation: 1 });
        await statuses.put(apology(answered('replayed', 'failed', 6 + ahead)));
        expect(await statuses.get('pending first')).toEqual(answered('pending first', 'delivered', 5));
        expect(await statuses.get('final first')).toEqual(answered('final first', 'delivered', 5));
        expect(await statuses.get('same time')).toEqual(answered('same time', 'delivered', 5));
        expect(await statuses.get('apology')).toEqual(apology(answered('apology', 'failed', 5)));
        expect(await statuses.get('replayed')).toEqual({
          ...answered('replayed', 'delivered', 5),
          generation: 1,
        });
      } finally {
        await database.start();
      }
    }, 60_000);
  });

  describe('when the outbox holds maxEntries records', () => {
    it('is full, so admission refuses, yet keeps what admitted messages still write, until a drain makes room', async () => {
      const store = await openStore();
      const outbox = await open({ inner: store.auditLog, maxEntries: 5, drainEveryMs: 60_000 });
      await database.stop();
      try {
        for (const record of records(5)) await outbox.append(record);
        expect(outbox.isFull()).toBe(true);
        expect(outbox.refusal()).toEqual({ reason: 'audit outbox is full', retryAfterMs: 5000 });
        // The outcome of a message admitted before the outbox filled up is not lost.
        await outbox.append(auditRecordFixture(6));
        expect(await outboxLength()).toBe(6);
      } finally {
        await database.start();
      }
      await eventually(
        async () => {
          await outbox.drain();
          return (await outboxLength()) === 0;
        },
        20_000,
        'the outbox drained',
      );
      expect(outbox.isFull()).toBe(false);
      expect(outbox.refusal()).toBeUndefined();
      expect(await storedIds(store)).toEqual(
        records(6)
          .map((record) => record.id)
          .sort(),
      );
    }, 60_000);
  });

  describe('when two replicas drain the same outbox', () => {
    it('hands every record to exactly one of them', async () => {
      const store = await openStore();
      const writer = await open({ inner: store.auditLog, drainEveryMs: 60_000 });
      const written = records(300);
      await database.stop();
      try {
        for (const record of written) await writer.append(record);
      } finally {
        await database.start();
      }
      expect(await outboxLength()).toBe(300);

      const first = counting(store.auditLog);
      const second = counting(store.auditLog);
      const replicas = [
        await open({ inner: first.log, batchSize: 7, drainEveryMs: 60_000 }),
        await open({ inner: second.log, batchSize: 7, drainEveryMs: 60_000 }),
      ];
      const drained = await Promise.all(replicas.map((replica) => replica.drain()));

      expect(drained.reduce((sum, count) => sum + count, 0)).toBe(300);
      const appendsPerId = written.map(
        (record) => (first.appends.get(record.id) ?? 0) + (second.appends.get(record.id) ?? 0),
      );
      expect(new Set(appendsPerId)).toEqual(new Set([1]));
      expect(await storedIds(store)).toEqual(written.map((record) => record.id).sort());
      expect(await outboxLength()).toBe(0);
    }, 30_000);
  });

  describe('when a replica dies holding a batch', () => {
    it('another replica returns the batch to the outbox once the lease expires and stores it', async () => {
      const store = await openStore();
      const doomedClient = new Redis(REDIS_URL, FAIL_FAST_OPTIONS);
      const doomed = await createAuditOutbox({
        client: doomedClient,
        prefix,
        inner: store.auditLog,
        batchSize: 10,
        leaseMs: 5000,
        drainEveryMs: 60_000,
        replicaId: 'doomed',
      });
      const written = records(25);
      const processing = `{${prefix}}:audit-outbox:processing:doomed`;
      await database.stop();
      try {
        for (const record of written) await doomed.append(record);
        await doomed.drain();
        expect(await redis.llen(processing)).toBe(10);
      } finally {
        await database.start();
      }
      // Dies: its connection is gone and it never trims or hands back its batch.
      doomedClient.disconnect();

      const survivor = await open({ inner: store.auditLog, drainEveryMs: 60_000, replicaId: 'survivor' });
      // Before the lease ends the batch is the dead replica's: the survivor drains the rest only.
      expect(await survivor.drain()).toBe(15);
      expect(await redis.llen(processing)).toBe(10);
      await eventually(
        async () => {
          await survivor.drain();
          return (await storedIds(store)).length === 25;
        },
        10_000,
        'the dead replica batch stored',
      );
      expect(await storedIds(store)).toEqual(written.map((record) => record.id).sort());
      expect(await redis.exists(processing)).toBe(0);
      expect(await redis.zscore(`{${prefix}}:audit-outbox:drainers`, 'doomed')).toBeNull();
    }, 30_000);
  });
});
