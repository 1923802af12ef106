/**
 * Memory with 100k messages pending: Switchboard's pool holds 100k accepted messages over 10k
 * sessions and the controller is not started. Reports the process RSS and the heap, and splits
 * the heap into the messages themselves (OpenAPI-shaped, short text) and what the pool adds.
 */
import { type Measurement, formatNumber, progress, runScenario } from './support/report.js';
import { LIMITS } from './support/schedulers-under-test.js';
import { collectGarbage } from './support/settings.js';
import { createBenchPool, queuedMessageOf } from './support/switchboard-scheduler.js';
import { buildMessages } from './support/workloads.js';

const PENDING = 100_000;
const RSS_TARGET_MB = 300;
const MB = 1024 * 1024;

function snapshot(): { rssMb: number; heapUsedMb: number } {
  collectGarbage(3);
  const usage = process.memoryUsage();
  return { rssMb: usage.rss / MB, heapUsedMb: usage.heapUsed / MB };
}

await runScenario('memory-pending', async () => {
  const pool = createBenchPool(LIMITS);
  const before = snapshot();
  for (const message of buildMessages({ id: '100k pending', messages: PENDING, sessions: 10_000 })) {
    await pool.enqueue(queuedMessageOf(message));
  }
  const pending = snapshot();
  const stats = await pool.stats();
  if (stats.pending !== PENDING)
    throw new Error(`expected ${PENDING} pending, the pool holds ${stats.pending}`);
  progress(`rss ${formatNumber(pending.rssMb)} MB, heap ${formatNumber(pending.heapUsedMb)} MB`);

  // The same messages once more, held in a plain array: their own size, without the pool's.
  const inbound = buildMessages({ id: 'sizing', messages: PENDING, sessions: 10_000 }, PENDING).map(
    (m) => m.inbound,
  );
  const sized = snapshot();
  const totalBytes = ((pending.heapUsedMb - before.heapUsedMb) * MB) / PENDING;
  const messageBytes = ((sized.heapUsedMb - pending.heapUsedMb) * MB) / inbound.length - 8;

  const measurements: Measurement[] = [
    { metric: 'rss before', value: before.rssMb, unit: 'MB' },
    { metric: 'rss with 100k pending', value: pending.rssMb, unit: 'MB' },
    { metric: 'heap used before', value: before.heapUsedMb, unit: 'MB' },
    { metric: 'heap used with 100k pending', value: pending.heapUsedMb, unit: 'MB' },
    { metric: 'heap per pending message, all told', value: totalBytes, unit: 'B' },
    { metric: 'heap per pending message: the message itself', value: messageBytes, unit: 'B' },
    { metric: 'heap per pending message: the pool', value: totalBytes - messageBytes, unit: 'B' },
  ];
  return {
    measurements,
    targets: [
      {
        target: 'rss with 100k messages pending',
        expected: `≤ ${RSS_TARGET_MB} MB`,
        actual: `${formatNumber(pending.rssMb)} MB`,
        pass: pending.rssMb <= RSS_TARGET_MB,
      },
    ],
    details: { before, pending, sized, pool: stats },
  };
});
