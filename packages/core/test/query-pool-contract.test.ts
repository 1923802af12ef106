import { createMemoryJournal, createMemoryQueryPool } from '../src/index.js';
import { queryPoolContract } from '../src/testing/index.js';

queryPoolContract('memory query pool', async ({ now, concurrency, limits, pipelines }) => ({
  store: createMemoryQueryPool({ now, concurrency, limits, pipelines }),
  close: async () => {},
}));

queryPoolContract('memory query pool with a journal', async ({ now, concurrency, limits, pipelines }) => ({
  store: createMemoryQueryPool({
    now,
    concurrency,
    limits,
    pipelines,
    journal: createMemoryJournal({ now }),
  }),
  close: async () => {},
}));
