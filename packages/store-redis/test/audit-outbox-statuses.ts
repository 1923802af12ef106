import { randomUUID } from 'node:crypto';
import type { StoreFactory } from '@switchboard/contracts';
import type { MessageStatusStore } from '@switchboard/core';
import { createPostgresStore } from '@switchboard/store-postgres';
import { POSTGRES_URL, dropSchema, randomSchemaName } from '@switchboard/testkit/postgres';
import { createAuditOutbox } from '../src/index.js';
import type { RedisTarget } from '../src/redis-connection.js';

/**
 * A `messageStatusStoreContract` factory: the audit outbox's statuses in front of PostgreSQL (a
 * schema of each test's own), as every replica of `store: redis` uses them, on the Redis at `url()`
 * (read per test, so a server started in `beforeAll` can serve). `removeKeys` removes a test's
 * keys under its prefix; a private Redis that goes with the file needs none.
 */
export function auditOutboxStatuses(
  url: () => RedisTarget,
  removeKeys: (prefix: string) => Promise<void> = async () => {},
): StoreFactory<MessageStatusStore> {
  return async ({ now }) => {
    const schema = randomSchemaName();
    const prefix = `sb-test-${randomUUID()}`;
    const store = await createPostgresStore({ url: POSTGRES_URL, schema, now });
    const leave = async () => {
      await store.close();
      await dropSchema(schema);
      await removeKeys(prefix);
    };
    const outbox = await createAuditOutbox({
      url: url(),
      prefix,
      inner: store.auditLog,
      statuses: store.statuses,
      drainEveryMs: 60_000,
    }).catch(async (err: unknown) => {
      await leave();
      throw err;
    });
    return {
      store: outbox.statuses as MessageStatusStore,
      close: async () => {
        try {
          await outbox.shutdown();
        } finally {
          await leave();
        }
      },
    };
  };
}
