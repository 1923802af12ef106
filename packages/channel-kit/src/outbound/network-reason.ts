/**
 * What went wrong with a request that got no answer, for a `PlatformFailure.network`: the system
 * error code (`ECONNREFUSED`, `ETIMEDOUT`) of `error` or of its cause (fetch reports `TypeError:
 * fetch failed` with the system error as its cause), else the error's name. Never its message,
 * which may hold the request URL and so a token.
 */
export function networkReasonOf(error: unknown): string {
  const { code, cause, name } = (error ?? {}) as {
    code?: unknown;
    cause?: { code?: unknown };
    name?: unknown;
  };
  const reason = code ?? cause?.code;
  if (typeof reason === 'string') return reason;
  return typeof name === 'string' ? name : 'unknown error';
}
