/**
 * Runs tasks that share a key one after the other, and tasks of different keys concurrently.
 * Keys are forgotten as soon as their queue is empty, so memory follows the work in progress.
 */
export interface KeyedSerializer {
  /** Runs `task` after the tasks already queued under `key`; its result or failure is the caller's. */
  run<T>(key: string, task: () => Promise<T>): Promise<T>;
  /** Resolves once the tasks queued under `key` so far have settled. */
  idle(key: string): Promise<void>;
}

export function createKeyedSerializer(): KeyedSerializer {
  const tails = new Map<string, Promise<void>>();

  return {
    run(key, task) {
      const result = (tails.get(key) ?? Promise.resolve()).then(task);
      // The next task runs after this one whether it succeeded or not.
      const tail = result.then(
        () => undefined,
        () => undefined,
      );
      tails.set(key, tail);
      void tail.then(() => {
        if (tails.get(key) === tail) tails.delete(key);
      });
      return result;
    },
    async idle(key) {
      await tails.get(key);
    },
  };
}
