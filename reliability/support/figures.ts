import { appendFileSync } from 'node:fs';

/**
 * How long and how hard the reliability scenarios run: `short` is the form `.ci/run` runs,
 * `full` the documented one (`RELIABILITY_PROFILE=full npm run test:reliability`).
 */
export const profile: 'short' | 'full' = process.env.RELIABILITY_PROFILE === 'full' ? 'full' : 'short';

/** One scenario's measured figures: counts, milliseconds, bytes, ratios. */
export type Figures = Record<string, number | string>;

/**
 * Records what a scenario measured. Scenarios run in separate vitest workers, so each record is
 * one JSON line appended to the report file the runner names (`RELIABILITY_REPORT`); the runner
 * prints them all as one table at the end. Without a runner the line goes to stdout.
 */
export function recordFigures(scenario: string, figures: Figures): void {
  const line = `${JSON.stringify({ scenario, profile, figures })}\n`;
  const report = process.env.RELIABILITY_REPORT;
  if (report === undefined) process.stdout.write(line);
  else appendFileSync(report, line);
}
