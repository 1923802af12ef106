/**
 * Polls `check` every 20 ms until it returns a truthy value, which it resolves with, or fails
 * naming `what` once `timeoutMs` has passed. Real time: for tests that talk to real servers.
 */
export async function eventually<T>(
  check: () => Promise<T | undefined | false> | T | undefined | false,
  timeoutMs = 10_000,
  what = 'condition',
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`${what} not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * Resolves what `promise` resolves, or fails naming `what` once `timeoutMs` has passed: a wait on
 * an event (a process exit, a socket close) that fails within its bound instead of at the test's
 * timeout, and says what did not happen. Real time, like `eventually`.
 */
export async function resolvesWithin<T>(promise: Promise<T>, timeoutMs: number, what: string): Promise<T> {
  // Made here, so that its stack names the test's line rather than a timer's.
  const failure = new Error(`${what} did not happen within ${timeoutMs} ms`);
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(failure), timeoutMs);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
