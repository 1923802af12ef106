/**
 * Cost per message against the backlog: the whole backlog (1k, 10k, 100k messages) is enqueued
 * first, then the time to drain it is measured; µs/message = drain time ÷ backlog. A scheduler
 * whose dispatch is O(log n) keeps that figure flat as the backlog grows; one that scans its queue
 * per dispatch (LangBot) pays more per message the longer the queue. Two shapes: many quiet
 * sessions (backlog ÷ 10 sessions, 10 messages each) and one hot session holding half of the
 * backlog beside 99 others.
 *
 * Method, the same for every scheduler and backlog: a sample times 100k messages — one drain of
 * 100k, ten of 10k or a hundred of 1k, each by a fresh scheduler — with one full GC before it and
 * none between its drains; a figure is the fastest of SETTINGS.schedulerRuns samples, taken in
 * turn with the other schedulers. Why not the fastest of many single drains with a GC before
 * each: a forced GC makes V8 drop and re-warm optimized code, so a 1k drain after one timed
 * mostly V8's warm-up (a spread of 10×), and the luckiest of 100 short drains was then compared
 * with the luckiest of 3 long ones.
 */
import { type Measurement, type TargetCheck, formatNumber, progress, runScenario } from './support/report.js';
import { drainSampleMs } from './support/scheduler-runs.js';
import { SCHEDULERS } from './support/schedulers-under-test.js';
import { SETTINGS } from './support/settings.js';
import { SampleSet } from './support/stats.js';
import { type Workload, buildMessages } from './support/workloads.js';

const BACKLOGS = [1000, 10_000, 100_000] as const;
/** Messages timed per sample: small backlogs are drained several times over. */
const SAMPLE_MESSAGES = 100_000;

const SHAPES: ReadonlyArray<{ id: string; workload: (backlog: number) => Workload }> = [
  { id: 'many sessions', workload: (backlog) => ({ id: 'many', messages: backlog, sessions: backlog / 10 }) },
  {
    id: 'hot session',
    workload: (backlog) => ({ id: 'hot', messages: backlog, sessions: 100, hotShare: 0.5 }),
  },
];

await runScenario('scheduler-backlog', async () => {
  const measurements: Measurement[] = [];
  const targets: TargetCheck[] = [];
  /** µs per message, keyed `scheduler · shape · backlog`. */
  const costs = new SampleSet();
  const costUs = (name: string, shape: string, backlog: number) =>
    costs.fastest(`${name} · ${shape} · ${backlog}`);
  const warmup = buildMessages({ id: 'warm-up', messages: 5000, sessions: 50 });
  for (const scheduler of SCHEDULERS) await drainSampleMs(scheduler.create, warmup, 1);

  for (const shape of SHAPES) {
    for (const backlog of BACKLOGS) {
      const messages = buildMessages(shape.workload(backlog));
      const drains = Math.ceil(SAMPLE_MESSAGES / backlog);
      for (let sample = 0; sample < SETTINGS.schedulerRuns; sample++) {
        for (const scheduler of SCHEDULERS) {
          const elapsedMs = await drainSampleMs(scheduler.create, messages, drains);
          costs.add(`${scheduler.name} · ${shape.id} · ${backlog}`, (elapsedMs * 1000) / (drains * backlog));
        }
      }
      progress(
        `${shape.id} · backlog ${backlog}: ${SCHEDULERS.map((s) => `${s.name} ${formatNumber(costUs(s.name, shape.id, backlog))} µs/msg`).join(', ')}`,
      );
    }

    for (const scheduler of SCHEDULERS) {
      for (const backlog of BACKLOGS) {
        measurements.push({
          metric: `${scheduler.name} · ${shape.id} · backlog ${backlog / 1000}k`,
          value: costUs(scheduler.name, shape.id, backlog),
          unit: 'µs/msg',
        });
      }
      measurements.push({
        metric: `${scheduler.name} · ${shape.id} · cost 100k ÷ cost 1k`,
        value: costUs(scheduler.name, shape.id, 100_000) / costUs(scheduler.name, shape.id, 1000),
        unit: '×',
      });
    }
    for (const baseline of SCHEDULERS.slice(1)) {
      measurements.push({
        metric: `switchboard ÷ ${baseline.name} msg/s · ${shape.id} · backlog 100k`,
        value: costUs(baseline.name, shape.id, 100_000) / costUs('switchboard', shape.id, 100_000),
        unit: '×',
      });
    }

    const speedup = costUs('langbot', shape.id, 100_000) / costUs('switchboard', shape.id, 100_000);
    targets.push({
      target: `scheduler msg/s at 100k backlog vs LangBot port (${shape.id})`,
      expected: '≥ 10×',
      actual: `${formatNumber(speedup)}×`,
      pass: speedup >= 10,
    });
    const growth = costUs('switchboard', shape.id, 100_000) / costUs('switchboard', shape.id, 1000);
    targets.push({
      target: `switchboard cost/msg at 100k backlog ÷ at 1k (${shape.id})`,
      expected: '≤ 1.5×',
      actual: `${formatNumber(growth)}×`,
      pass: growth <= 1.5,
    });
  }
  return { measurements, targets, details: { costUsPerMessage: costs } };
});
