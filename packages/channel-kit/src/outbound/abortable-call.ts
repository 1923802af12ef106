/**
 * One platform call of a send or preview, bounded by `signal` (the send's deadline): rejects at
 * once when it has already aborted, and with `signal.reason` when the call fails after it did —
 * platform libraries report an aborted request as a network error, but the deadline is the real
 * cause. Any other failure rejects with `failure(error)`, its SB_CHANNEL_* form.
 */
export async function abortableCall<T>(
  signal: AbortSignal,
  call: () => Promise<T>,
  failure: (error: unknown) => Error,
): Promise<T> {
  signal.throwIfAborted();
  try {
    return await call();
  } catch (error) {
    if (signal.aborted) throw signal.reason;
    throw failure(error);
  }
}
