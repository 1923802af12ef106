import { createServer, type Server, type Socket } from 'node:net';
import {
  auditLogContract,
  auditRecordFixture,
  historyStoreContract,
  messageStatusStoreContract,
} from '@switchboard/contracts';
import { Pool } from 'pg';
import { describe, expect, it } from 'vitest';
import { createPostgresStore } from '../src/index.js';
import {
  POSTGRES_URL,
  closedPostgresUrl,
  postgresFactory,
  postgresReachable,
  useSchema,
} from './postgres-harness.js';

const reachable = await postgresReachable();

/** A claim of `key` for `messageId` by one caller of the `api` channel. */
const claimOf = (key: string, messageId: string) => ({
  channel: 'api',
  credential: 'key-a',
  key,
  fingerprint: `body of ${messageId}`,
  messageId,
  ttlMs: 60_000,
});

describe.skipIf(!reachable)('postgres', () => {
  auditLogContract(
    'postgres',
    postgresFactory((store) => store.auditLog),
  );
  messageStatusStoreContract(
    'postgres',
    postgresFactory((store) => store.statuses),
  );
  historyStoreContract(
    'postgres',
    postgresFactory((store) => store.history),
  );

  describe('createPostgresStore', () => {
    const schema = useSchema();

    describe('when two replicas share a schema', () => {
      it('binds an idempotency key for exactly one of their concurrent claims', async () => {
        const [a, b] = [await schema.open(), await schema.open()];
        const claims = ['m1', 'm2', 'm3', 'm4'].map((id, index) =>
          (index % 2 === 0 ? a : b).statuses.claimIdempotencyKey(claimOf('key-1', id)),
        );
        const results = await Promise.all(claims);
        expect(results.filter((result) => result === null)).toHaveLength(1);
        const winner = ['m1', 'm2', 'm3', 'm4'][results.indexOf(null)];
        const bound = { messageId: winner, fingerprint: `body of ${winner}` };
        expect(results.filter((result) => result !== null)).toEqual([bound, bound, bound]);
      });

      it('shows each what the other wrote', async () => {
        const [a, b] = [await schema.open(), await schema.open()];
        await a.statuses.put({
          id: 'm1',
          channel: 'api',
          tenant: 'default',
          generation: 0,
          status: 'completed',
          pipeline: 'assistant',
          rule: null,
          turn: 't1',
          replies: [{ text: 'hi' }],
          delivery: null,
          error: null,
          trace_id: null,
          updated_at: 1,
        });
        await a.history.append('s', 'assistant', [{ role: 'user', content: 'one' }]);
        await b.history.append('s', 'assistant', [{ role: 'assistant', content: 'two' }]);
        expect((await b.statuses.get('m1'))?.replies).toEqual([{ text: 'hi' }]);
        expect(await a.history.recent('s', 'assistant', 10)).toEqual([
          { role: 'user', content: 'one' },
          { role: 'assistant', content: 'two' },
        ]);
      });
    });

    describe('when history passes historyMaxEntries', () => {
      it('keeps only the newest entries of the conversation', async () => {
        const store = await schema.open({ historyMaxEntries: 3 });
        const entries = [1, 2, 3, 4, 5].map((n) => ({ role: 'user' as const, content: `m${n}` }));
        await store.history.append('s', 'assistant', entries.slice(0, 2));
        await store.history.append('s', 'assistant', entries.slice(2));
        expect(await store.history.recent('s', 'assistant', 10)).toEqual(entries.slice(2));
      });
    });

    describe('when texts hold U+0000, which PostgreSQL text cannot', () => {
      it('stores it as U+FFFD and still finds what was keyed by it', async () => {
        const store = await schema.open();
        const record = auditRecordFixture(1, { text: 'a\0b', session: 's\0' });
        await store.auditLog.append(record);
        await store.history.append('s\0', 'assistant', [{ role: 'user', content: 'x\0y' }]);
        expect((await store.auditLog.query({ limit: 10, session: 's\0' })).items).toEqual([
          { ...record, text: 'a\uFFFDb', session: 's\uFFFD' },
        ]);
        expect(await store.history.recent('s\0', 'assistant', 10)).toEqual([
          { role: 'user', content: 'x\uFFFDy' },
        ]);
      });
    });

    describe('when the caller passes its own pool', () => {
      it('uses it and leaves it open on close', async () => {
        const pool = new Pool({ connectionString: POSTGRES_URL, max: 2 });
        try {
          const store = await schema.open({ pool, url: undefined });
          await store.statuses.claimIdempotencyKey(claimOf('key-1', 'm1'));
          await store.close();
          const { rows } = await pool.query(`SELECT message_id FROM ${schema.name}.idempotency_key`);
          expect(rows).toEqual([{ message_id: 'm1' }]);
        } finally {
          await pool.end();
        }
      });
    });

    describe('when the schema name is not a plain identifier', () => {
      it('refuses it with SB_CONFIG_INVALID before connecting', async () => {
        await expect(
          createPostgresStore({ url: await closedPostgresUrl(), schema: 'a"; DROP' }),
        ).rejects.toMatchObject({
          code: 'SB_CONFIG_INVALID',
          message: expect.stringContaining('postgres.schema'),
        });
      });
    });
  });
});

describe('createPostgresStore', () => {
  describe('when nothing listens at the address', () => {
    it('rejects promptly with a retryable SB_STORE_UNAVAILABLE naming the address', async () => {
      const url = await closedPostgresUrl();
      const startedAt = performance.now();
      const error = await createPostgresStore({ url, schema: 'unreachable' }).catch((err: unknown) => err);
      expect(performance.now() - startedAt).toBeLessThan(2000);
      expect(error).toMatchObject({
        code: 'SB_STORE_UNAVAILABLE',
        retryable: true,
        message: expect.stringContaining(new URL(url).host),
      });
    });
  });

  describe('when the server accepts connections but never answers', () => {
    it('rejects with SB_STORE_UNAVAILABLE once connectTimeoutMs has passed', async () => {
      const sockets: Socket[] = [];
      const server: Server = createServer((socket) => void sockets.push(socket));
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      try {
        const startedAt = performance.now();
        const error = await createPostgresStore({
          url: `postgres://postgres@127.0.0.1:${port}/test`,
          connectTimeoutMs: 300,
        }).catch((err: unknown) => err);
        const elapsedMs = performance.now() - startedAt;
        expect(elapsedMs).toBeGreaterThanOrEqual(250);
        expect(elapsedMs).toBeLessThan(2000);
        expect(error).toMatchObject({ code: 'SB_STORE_UNAVAILABLE', retryable: true });
      } finally {
        for (const socket of sockets) socket.destroy();
        await new Promise((resolve) => server.close(resolve));
      }
    });
  });
});
