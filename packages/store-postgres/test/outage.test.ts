import { auditRecordFixture } from '@switchboard/contracts';
import { eventually } from '@switchboard/testkit/eventually';
import { startPrivatePostgres } from '@switchboard/testkit/postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPostgresStore } from '../src/index.js';
import { postgresReachable } from './postgres-harness.js';

const reachable = await postgresReachable();

describe.skipIf(!reachable)('createPostgresStore', () => {
  let database: Awaited<ReturnType<typeof startPrivatePostgres>>;

  beforeAll(async () => {
    database = await startPrivatePostgres();
  });
  afterAll(() => database?.remove());

  describe('when the database stops after the store opened', () => {
    it('rejects calls with a retryable SB_STORE_UNAVAILABLE and serves again once it is back, without reopening', async () => {
      const store = await createPostgresStore({
        url: database.url,
        schema: 'outage',
        connectTimeoutMs: 1000,
      });
      try {
        await store.auditLog.append(auditRecordFixture(1));
        await database.stop();

        await expect(store.auditLog.append(auditRecordFixture(2))).rejects.toMatchObject({
          code: 'SB_STORE_UNAVAILABLE',
          retryable: true,
        });
        await expect(store.statuses.get('m1')).rejects.toMatchObject({ code: 'SB_STORE_UNAVAILABLE' });
        await expect(store.history.append('s', 'p', [{ role: 'user', content: 'x' }])).rejects.toMatchObject({
          code: 'SB_STORE_UNAVAILABLE',
        });

        await database.start();
        await eventually(
          () =>
            store.auditLog.append(auditRecordFixture(2)).then(
              () => true,
              () => false,
            ),
          10_000,
          'an append after the restart',
        );
        const { items } = await store.auditLog.query({ limit: 10 });
        expect(items.map((item) => item.id)).toEqual([auditRecordFixture(2).id, auditRecordFixture(1).id]);
      } finally {
        await store.close();
      }
    });
  });
});
