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

  function start<T>(task: () => Promise<T>): Promise<T> {
    try {
      return task();
    } catch (error) {
      return Promise.reject(error);
    }
  }

  return {
    run(key, task) {
      const previous = tails.get(key);
      // An idle key starts its task at once: the common case, one task per key, waits for no tick.
      const result = previous === undefined ? start(task) : previous.then(task);
      // The next task runs after this one whether it succeeded or not; the last one forgets the key.
      const settled = () => {
        if (tails.get(key) === tail) tails.delete(key);
      };
      const tail = result.then(settled, settled);
      tails.set(key, tail);
      return result;
    },
    async idle(key) {
      await tails.get(key);
    },
  };
}
