import {
  type BenchMessage,
  type SchedulerFactory,
  createCompletionTracker,
  noopPipeline,
} from './scheduler.js';
import { LIMITS } from './schedulers-under-test.js';
import { collectGarbage } from './settings.js';
import { timeMs } from './stats.js';

/**
 * Streaming: the consumer runs while a producer enqueues every message as fast as the scheduler
 * accepts them. Returns the milliseconds from the first enqueue to the last completion.
 */
export async function streamingRunMs(
  create: SchedulerFactory,
  messages: readonly BenchMessage[],
): Promise<number> {
  const tracker = createCompletionTracker();
  const scheduler = create({ ...LIMITS, pipeline: noopPipeline, onDone: tracker.onDone });
  collectGarbage();
  scheduler.start();
  const elapsedMs = await timeMs(async () => {
    for (const message of messages) await scheduler.enqueue(message);
    await tracker.until(messages.length);
  });
  await scheduler.stop();
  return elapsedMs;
}

/**
 * Backlog: every message is enqueued before the consumer starts, and the time from `start()` to
 * the last completion is the cost of draining a backlog of `messages.length`. One sample drains
 * such a backlog `drains` times, each time with a fresh scheduler, and returns the total drain
 * time in milliseconds. A full GC runs before the first drain only: forcing one makes V8 drop
 * and re-warm optimized code, which would weigh on every drain of a small backlog.
 */
export async function drainSampleMs(
  create: SchedulerFactory,
  messages: readonly BenchMessage[],
  drains: number,
): Promise<number> {
  let elapsedMs = 0;
  for (let drain = 0; drain < drains; drain++) {
    const tracker = createCompletionTracker();
    const scheduler = create({ ...LIMITS, pipeline: noopPipeline, onDone: tracker.onDone });
    for (const message of messages) await scheduler.enqueue(message);
    if (drain === 0) collectGarbage();
    elapsedMs += await timeMs(async () => {
      scheduler.start();
      await tracker.until(messages.length);
    });
    await scheduler.stop();
  }
  return elapsedMs;
}
