/**
 * Latency the scheduler adds to a turn at light load, in process: one message at a time, each
 * sent only after the previous one's outcome. Added = (pipeline start − enqueue) + (outcome −
 * pipeline end): everything the gateway's scheduling does around a pipeline, measured for
 * Switchboard and, for reference, the two ports.
 */
import { type Measurement, type TargetCheck, formatNumber, progress, runScenario } from './support/report.js';
import { type BenchPipeline, createCompletionTracker } from './support/scheduler.js';
import { LIMITS, SCHEDULERS } from './support/schedulers-under-test.js';
import { SETTINGS, collectGarbage } from './support/settings.js';
import { summarize } from './support/stats.js';
import { buildMessages } from './support/workloads.js';

const WARMUP_MESSAGES = 2000;
const P50_TARGET_MS = 2;

await runScenario('scheduler-latency', async () => {
  const measurements: Measurement[] = [];
  const targets: TargetCheck[] = [];
  const details: Record<string, unknown> = {};
  const messages = buildMessages({
    id: 'latency',
    messages: SETTINGS.latencyMessages + WARMUP_MESSAGES,
    sessions: 100,
  });

  for (const scheduler of SCHEDULERS) {
    let startedAt = 0;
    let endedAt = 0;
    let doneAt = 0;
    const pipeline: BenchPipeline = async (_messageId, text) => {
      startedAt = performance.now();
      await null;
      endedAt = performance.now();
      return text;
    };
    const tracker = createCompletionTracker(() => {
      doneAt = performance.now();
    });
    const subject = scheduler.create({ ...LIMITS, pipeline, onDone: tracker.onDone });
    subject.start();
    collectGarbage();
    const addedUs: number[] = [];
    for (const [index, message] of messages.entries()) {
      const enqueuedAt = performance.now();
      await subject.enqueue(message);
      await tracker.until(index + 1);
      if (index >= WARMUP_MESSAGES) addedUs.push((startedAt - enqueuedAt + (doneAt - endedAt)) * 1000);
    }
    await subject.stop();
    const summary = summarize(addedUs);
    details[scheduler.name] = summary;
    progress(`${scheduler.name}: p50 ${formatNumber(summary.p50)} µs, p99 ${formatNumber(summary.p99)} µs`);
    measurements.push(
      { metric: `${scheduler.name} · added latency p50`, value: summary.p50, unit: 'µs' },
      { metric: `${scheduler.name} · added latency p99`, value: summary.p99, unit: 'µs' },
    );
    if (scheduler.name === 'switchboard') {
      targets.push({
        target: 'switchboard added latency per turn p50 (in process)',
        expected: `< ${P50_TARGET_MS} ms`,
        actual: `${formatNumber(summary.p50 / 1000)} ms`,
        pass: summary.p50 / 1000 < P50_TARGET_MS,
      });
    }
  }
  return { measurements, targets, details };
});
