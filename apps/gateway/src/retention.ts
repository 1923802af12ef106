import type { Logger } from '@switchboard/core';

/** One kind of record that ages out: `prune(beforeMs)` deletes what is older and says how many. */
export interface RetentionTask {
  name: string;
  keepMs: number;
  prune(beforeMs: number): Promise<number>;
}

const HOUR_MS = 3_600_000;
export const DAY_MS = 24 * HOUR_MS;

/** The pruning of the stores that age out. */
export interface Retention {
  /** Prunes every task now and then every hour. */
  start(): void;
  stop(): void;
}

/** Prunes every task at start and then every hour, so that no store grows with traffic forever. */
export function createRetention(tasks: readonly RetentionTask[], logger: Logger): Retention {
  const log = logger.child({ component: 'retention' });
  async function pruneAll(): Promise<void> {
    for (const task of tasks) {
      try {
        const removed = await task.prune(Date.now() - task.keepMs);
        if (removed > 0) log.info({ task: task.name, removed }, 'pruned');
      } catch (err) {
        log.error({ err, task: task.name }, 'prune failed');
      }
    }
  }
  let timer: NodeJS.Timeout | undefined;
  return {
    start() {
      void pruneAll();
      timer = setInterval(() => void pruneAll(), HOUR_MS);
      timer.unref();
    },
    stop() {
      clearInterval(timer);
    },
  };
}
