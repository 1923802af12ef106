import type { StoreFactory } from '@switchboard/contracts';
import { POSTGRES_URL, dropSchema, randomSchemaName } from '@switchboard/testkit/postgres';
import { afterEach } from 'vitest';
import { type PostgresStore, type PostgresStoreOptions, createPostgresStore } from '../src/index.js';

export {
  POSTGRES_URL,
  closedPostgresUrl,
  dropSchema,
  postgresReachable,
  queryPostgres,
  randomSchemaName,
} from '@switchboard/testkit/postgres';

/**
 * A contract factory for one port of a store on a fresh schema of the shared PostgreSQL, dropped
 * with the harness; `reopen` closes the store and opens a new one on the same schema.
 */
export function postgresFactory<Store>(pick: (store: PostgresStore) => Store): StoreFactory<Store> {
  return async ({ now }) => {
    const schema = randomSchemaName();
    const open = () => createPostgresStore({ url: POSTGRES_URL, schema, now });
    let store = await open();
    return {
      store: pick(store),
      close: async () => {
        await store.close();
        await dropSchema(schema);
      },
      reopen: async () => {
        await store.close();
        store = await open();
        return pick(store);
      },
    };
  };
}

/**
 * Stores of one test on one fresh schema (each `open` another replica on it), closed and the
 * schema dropped after the test.
 */
export function useSchema() {
  const opened: PostgresStore[] = [];
  let schema = randomSchemaName();

  afterEach(async () => {
    for (const store of opened.splice(0)) await store.close();
    await dropSchema(schema);
    schema = randomSchemaName();
  });

  return {
    get name() {
      return schema;
    },
    async open(options: Partial<PostgresStoreOptions> = {}): Promise<PostgresStore> {
      const store = await createPostgresStore({ url: POSTGRES_URL, schema, ...options });
      opened.push(store);
      return store;
    },
  };
}
