import { defineConfig } from 'vitest/config';

// Tests run against the TypeScript sources: every package exports them under the
// `development` condition, and `dist/` only for the built service.
export default defineConfig({
  resolve: { conditions: ['development'] },
  ssr: { resolve: { conditions: ['development'] } },
  test: {
    include: ['packages/*/test/**/*.test.ts', 'apps/*/test/**/*.test.ts'],
    // End-to-end tests start `switchboard serve` processes, which take up to ~15 s on a loaded
    // 2-core machine; a hang still fails, within a minute.
    testTimeout: 60_000,
    hookTimeout: 30_000,
    pool: 'forks',
    // CI reads a plain `N passed, N failed` line that .ci/run prints from this report.
    reporters: process.env.CI ? ['default', ['json', { outputFile: '.ci/results.json' }]] : ['default'],
  },
});
