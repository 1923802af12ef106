/**
 * Per-session memory: 1,000,000 distinct sessions are each served once (in batches of 10k), then
 * the heap after full GCs is compared with the heap before (taken after a warm-up). A scheduler
 * that frees a session's state once it has nothing queued or running returns to the baseline;
 * one that keeps a record per session seen grows with every new session. Switchboard is the
 * target; the ports are run the same way for reference.
 */
import { type Measurement, type TargetCheck, formatNumber, progress, runScenario } from './support/report.js';
import { type BenchMessage, createCompletionTracker, noopPipeline } from './support/scheduler.js';
import { LIMITS, SCHEDULERS } from './support/schedulers-under-test.js';
import { SETTINGS, collectGarbage } from './support/settings.js';
import { benchMessage } from './support/workloads.js';

const BATCH = 10_000;
const WARMUP_SESSIONS = 20_000;
/** "Returns to the baseline": less than a byte per session over the whole run. */
const GROWTH_TARGET_BYTES = 1024 * 1024;
const MB = 1024 * 1024;

function heapUsed(): number {
  collectGarbage(3);
  return process.memoryUsage().heapUsed;
}

await runScenario('memory-sessions', async () => {
  const measurements: Measurement[] = [];
  const targets: TargetCheck[] = [];
  const details: Record<string, unknown> = {};
  const sessions = SETTINGS.memorySessions;

  for (const scheduler of SCHEDULERS) {
    const tracker = createCompletionTracker();
    const subject = scheduler.create({ ...LIMITS, pipeline: noopPipeline, onDone: tracker.onDone });
    subject.start();
    let served = 0;
    /** Serves `count` new sessions, one message each. */
    const serve = async (count: number) => {
      for (let start = 0; start < count; start += BATCH) {
        const batch: BenchMessage[] = [];
        for (let i = 0; i < Math.min(BATCH, count - start); i++)
          batch.push(benchMessage(served + i, `s${served + i}`));
        for (const message of batch) await subject.enqueue(message);
        served += batch.length;
        await tracker.until(served);
      }
    };
    await serve(WARMUP_SESSIONS);
    const before = heapUsed();
    await serve(sessions);
    const after = heapUsed();
    await subject.stop();
    const growth = after - before;
    details[scheduler.name] = { sessions, heapBeforeBytes: before, heapAfterBytes: after };
    progress(`${scheduler.name}: heap ${formatNumber(before / MB)} MB → ${formatNumber(after / MB)} MB`);
    measurements.push(
      { metric: `${scheduler.name} · heap before`, value: before / MB, unit: 'MB' },
      {
        metric: `${scheduler.name} · heap after ${sessions.toLocaleString('en-US')} sessions`,
        value: after / MB,
        unit: 'MB',
      },
      { metric: `${scheduler.name} · growth per session`, value: growth / sessions, unit: 'B' },
    );
    if (scheduler.name === 'switchboard') {
      targets.push({
        target: `switchboard heap growth after ${sessions.toLocaleString('en-US')} sessions served once`,
        expected: `< ${formatNumber(GROWTH_TARGET_BYTES / MB)} MB (no per-session growth)`,
        actual: `${formatNumber(growth / MB)} MB`,
        pass: growth < GROWTH_TARGET_BYTES,
      });
    }
  }
  return { measurements, targets, details };
});
