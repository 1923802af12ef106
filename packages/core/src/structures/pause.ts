/**
 * Resolves after `ms`, or at once when `signal` aborts — never rejects, so a loop that waits
 * between retries (a refused accept, a platform's `retry_after`) simply goes on to see why it
 * woke. Channels use it where they back off; unlike `timers/promises`, it runs on the timers
 * that tests fake.
 */
export function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}
