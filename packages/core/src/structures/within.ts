import { MAX_TIMER_DELAY_MS } from './wake-timer.js';

/**
 * `promise`'s value, or 'timeout' after `ms`; the timer never outlives the race. Clamped to
 * Node's longest delay: a longer one would fire after 1 ms and end a wait at once.
 */
export async function within<T>(promise: Promise<T>, ms: number): Promise<T | 'timeout'> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), Math.min(ms, MAX_TIMER_DELAY_MS));
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
