/**
 * `promise`, or a rejection with `abort(signal)` once `signal` aborts first; the awaited work
 * itself goes on (another waiter may still want it).
 */
export function untilAborted<T>(
  promise: Promise<T>,
  signal: AbortSignal,
  abort: (signal: AbortSignal) => unknown,
): Promise<T> {
  if (signal.aborted) return Promise.reject(abort(signal));
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(abort(signal));
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}
