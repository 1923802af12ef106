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
