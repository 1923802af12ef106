import { createMemoryJournal, createMemoryQueryPool } from '@switchboard/core';
import { queryPoolContract } from '../src/index.js';

queryPoolContract('memory query pool', async ({ now, concurrency, limits, pipelines, tenants }) => ({
  store: createMemoryQueryPool({ now, concurrency, limits, pipelines, tenants }),
  close: async () => {},
}));

queryPoolContract(
  'memory query pool with a journal',
  async ({ now, concurrency, limits, pipelines, tenants }) => ({
    store: createMemoryQueryPool({
      now,
      concurrency,
      limits,
      pipelines,
      tenants,
      journal: createMemoryJournal({ now }),
    }),
    close: async () => {},
  }),
);
