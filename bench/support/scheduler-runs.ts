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
 * Backlog: every message is enqueued before the consumer starts; returns the milliseconds from
 * `start()` to the last completion — the cost of draining a backlog of `messages.length`.
 */
export async function drainRunMs(
  create: SchedulerFactory,
  messages: readonly BenchMessage[],
): Promise<number> {
  const tracker = createCompletionTracker();
  const scheduler = create({ ...LIMITS, pipeline: noopPipeline, onDone: tracker.onDone });
  for (const message of messages) await scheduler.enqueue(message);
  collectGarbage();
  const elapsedMs = await timeMs(async () => {
    scheduler.start();
    await tracker.until(messages.length);
  });
  await scheduler.stop();
  return elapsedMs;
}
