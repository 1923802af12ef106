/** One figure of a scenario, as it appears in the combined table. */
export interface Measurement {
  /** What was measured, e.g. `switchboard · 100k msgs / 10k sessions`. */
  metric: string;
  value: number;
  unit: string;
}

/** A target of docs/BENCHMARKS.md checked against a figure. */
export interface TargetCheck {
  target: string;
  /** The bound, e.g. `≥ 10×`. */
  expected: string;
  /** The figure it was checked against, formatted. */
  actual: string;
  pass: boolean;
}

/** What a scenario process writes as the last line of its stdout. */
export interface ScenarioReport {
  scenario: string;
  measurements: Measurement[];
  targets: TargetCheck[];
  /** Raw figures (per run, per percentile…) kept in the results JSON. */
  details: Record<string, unknown>;
}

/** Formats `value` with a precision that suits its size. */
export function formatNumber(value: number): string {
  if (!Number.isFinite(value)) return String(value);
  const magnitude = Math.abs(value);
  if (magnitude >= 100) return Math.round(value).toLocaleString('en-US');
  if (magnitude >= 10) return value.toFixed(1);
  if (magnitude >= 1) return value.toFixed(2);
  return value.toFixed(3);
}

/** Left-aligned text columns under a header row. */
export function formatTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((title, column) =>
    Math.max(title.length, ...rows.map((row) => (row[column] ?? '').length)),
  );
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, column) => cell.padEnd(widths[column] ?? 0))
      .join('  ')
      .trimEnd();
  return [line(header), line(widths.map((width) => '-'.repeat(width))), ...rows.map(line)].join('\n');
}

export function measurementRows(report: ScenarioReport): string[][] {
  return report.measurements.map((m) => [report.scenario, m.metric, formatNumber(m.value), m.unit]);
}

export function targetRows(targets: readonly TargetCheck[]): string[][] {
  return targets.map((t) => [t.target, t.expected, t.actual, t.pass ? 'PASS' : 'MISS']);
}

/** Prints a scenario's own table on stderr (progress for humans). */
export function printReport(report: ScenarioReport): void {
  process.stderr.write(
    `\n${formatTable(['scenario', 'metric', 'value', 'unit'], measurementRows(report))}\n`,
  );
  if (report.targets.length > 0) {
    process.stderr.write(
      `\n${formatTable(['target', 'expected', 'actual', ''], targetRows(report.targets))}\n`,
    );
  }
}

/** Logs a progress line on stderr; stdout carries only the report. */
export function progress(text: string): void {
  process.stderr.write(`  ${text}\n`);
}

/**
 * Runs a scenario as a process: the figures as a table on stderr, the report as one JSON line on
 * stdout for `bench/run.ts`. Exits when done, since baseline loops may still wait on queues.
 */
export async function runScenario(
  scenario: string,
  measure: () => Promise<Omit<ScenarioReport, 'scenario'>>,
): Promise<void> {
  try {
    const report: ScenarioReport = { scenario, ...(await measure()) };
    printReport(report);
    process.stdout.write(`${JSON.stringify(report)}\n`);
    process.exit(0);
  } catch (error) {
    process.stderr.write(
      `${scenario} failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    process.exit(1);
  }
}
