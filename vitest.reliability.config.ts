import { defineConfig } from 'vitest/config';

// The reliability suite (docs/RELIABILITY.md): real `switchboard serve` processes under generated
// bad input, faults, load and attacks. Kept out of the unit suite's config: it runs on its own.
export default defineConfig({
  resolve: { conditions: ['development'] },
  ssr: { resolve: { conditions: ['development'] } },
  test: {
    include: ['reliability/**/*.test.ts'],
    testTimeout: 900_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // Scenarios measure memory, descriptors and latency of the processes they start: one at a time.
    fileParallelism: false,
  },
});
