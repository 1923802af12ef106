/**
 * One platform call of a send or preview, bounded by `signal` (the send's deadline): rejects at
 * once when it has already aborted, and with `signal.reason` as soon as it aborts — also when the
 * call ignores the signal, so that a send never outlives its deadline and goes on to post its
 * later parts after the outbox has given it up (and retried it). Platform libraries report an
 * aborted request as a network error, but the deadline is the real cause. Any other failure
 * rejects with `failure(error)`, its SB_CHANNEL_* form.
 */
export async function abortableCall<T>(
  signal: AbortSignal,
  call: () => Promise<T>,
  failure: (error: unknown) => Error,
): Promise<T> {
  signal.throwIfAborted();
  let onAbort = () => {};
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
  });
  try {
    return await Promise.race([call(), aborted]);
  } catch (error) {
    if (signal.aborted) throw signal.reason;
    throw failure(error);
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
}
