/**
 * Scheduler throughput, in process, no I/O: Switchboard's pool + controller against the LangBot
 * and VikingBot ports, same limits (20 global, 1 per session), a no-op async pipeline. The
 * consumer runs while a producer enqueues the whole workload; messages/s = messages ÷ time from
 * the first enqueue to the last completion, fastest of SETTINGS.schedulerRuns runs (the
 * fastest run is the one least disturbed by other work on the machine).
 */
import { type Measurement, progress, runScenario } from './support/report.js';
import { streamingRunMs } from './support/scheduler-runs.js';
import { SCHEDULERS } from './support/schedulers-under-test.js';
import { SETTINGS } from './support/settings.js';
import { SampleSet } from './support/stats.js';
import { SCHEDULER_WORKLOADS, buildMessages } from './support/workloads.js';

await runScenario('scheduler-throughput', async () => {
  const measurements: Measurement[] = [];
  const runsMs = new SampleSet();
  const warmup = buildMessages({ id: 'warm-up', messages: 5000, sessions: 50 });
  for (const scheduler of SCHEDULERS) await streamingRunMs(scheduler.create, warmup);

  for (const workload of SCHEDULER_WORKLOADS) {
    const messages = buildMessages(workload);
    // Runs alternate between schedulers so that drift in the machine hits all of them alike.
    for (let run = 0; run < SETTINGS.schedulerRuns; run++) {
      for (const scheduler of SCHEDULERS) {
        const elapsedMs = await streamingRunMs(scheduler.create, messages);
        runsMs.add(`${scheduler.name} · ${workload.id}`, elapsedMs);
        progress(`${workload.id} · ${scheduler.name} · run ${run + 1}: ${elapsedMs.toFixed(0)} ms`);
      }
    }
    const rate = (name: string) => workload.messages / (runsMs.fastest(`${name} · ${workload.id}`) / 1000);
    for (const scheduler of SCHEDULERS) {
      measurements.push({
        metric: `${scheduler.name} · ${workload.id}`,
        value: rate(scheduler.name),
        unit: 'msg/s',
      });
    }
    for (const baseline of SCHEDULERS.slice(1)) {
      measurements.push({
        metric: `switchboard ÷ ${baseline.name} · ${workload.id}`,
        value: rate('switchboard') / rate(baseline.name),
        unit: '×',
      });
    }
  }
  return { measurements, targets: [], details: { runsMs } };
});
