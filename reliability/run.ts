import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Figures } from './support/figures.js';

/**
 * `npm run test:reliability` (docs/RELIABILITY.md): runs the reliability scenarios with vitest,
 * then prints every scenario's figures as one table and a closing `N passed, N failed` line.
 * Arguments are passed to vitest (a file name runs one scenario). `RELIABILITY_PROFILE=full` is
 * the documented long run; `RELIABILITY_RESULTS=<file>` keeps vitest's JSON report there (CI
 * sums it with the unit suite's); `RELIABILITY_SEED=<n>` replays a run's random choices.
 */

interface VitestReport {
  numPassedTests: number;
  numFailedTests: number;
  numPendingTests: number;
  numTodoTests: number;
  testResults: Array<{ assertionResults: Array<{ fullName: string; status: string }> }>;
}

interface FigureLine {
  scenario: string;
  profile: string;
  figures: Figures;
}

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const scratch = mkdtempSync(join(tmpdir(), 'switchboard-reliability-'));
const reportPath = join(scratch, 'figures.jsonl');
const resultsPath = process.env.RELIABILITY_RESULTS ?? join(scratch, 'results.json');

const exitCode = await new Promise<number>((resolve) => {
  const child = spawn(
    join(root, 'node_modules/.bin/vitest'),
    [
      'run',
      '--config',
      'vitest.reliability.config.ts',
      '--reporter=default',
      '--reporter=json',
      `--outputFile.json=${resultsPath}`,
      ...process.argv.slice(2),
    ],
    { cwd: root, stdio: 'inherit', env: { ...process.env, RELIABILITY_REPORT: reportPath } },
  );
  child.once('exit', (code, signal) => resolve(code ?? (signal === null ? 1 : 128)));
});

printFigures(existsSync(reportPath) ? readFileSync(reportPath, 'utf8') : '');

if (!existsSync(resultsPath)) {
  process.stdout.write('no vitest report was written\n0 passed, 1 failed\n');
  process.exit(exitCode === 0 ? 1 : exitCode);
}
const report = JSON.parse(readFileSync(resultsPath, 'utf8')) as VitestReport;
for (const file of report.testResults) {
  for (const test of file.assertionResults) {
    if (test.status === 'failed') process.stdout.write(`failed: ${test.fullName}\n`);
  }
}
const skipped = report.numPendingTests + report.numTodoTests;
process.stdout.write(
  `${report.numPassedTests} passed, ${report.numFailedTests} failed${skipped > 0 ? `, ${skipped} skipped` : ''}\n`,
);
process.exit(exitCode);

/** One block per scenario: its figures one per line, names left, values right-aligned. */
function printFigures(jsonl: string): void {
  const lines = jsonl
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as FigureLine);
  if (lines.length === 0) {
    process.stdout.write('\nno scenario recorded figures\n');
    return;
  }
  const rows = lines.flatMap((line) => Object.entries(line.figures));
  const nameWidth = Math.max(...rows.map(([name]) => name.length));
  const valueWidth = Math.max(...rows.map(([, value]) => String(value).length));
  const rule = '─'.repeat(nameWidth + valueWidth + 4);
  process.stdout.write(`\nReliability figures (profile ${lines[0]?.profile})\n`);
  for (const { scenario, figures } of lines) {
    process.stdout.write(`${rule}\n${scenario}\n`);
    for (const [name, value] of Object.entries(figures)) {
      process.stdout.write(`  ${name.padEnd(nameWidth)}  ${String(value).padStart(valueWidth)}\n`);
    }
  }
  process.stdout.write(`${rule}\n`);
}
