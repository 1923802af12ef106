import type { Transformer } from 'grammy';
import { retryAfterMsOf } from '../errors.js';

/**
 * A Bot API transformer that reports every 429 answer with its `retry_after` in ms. Installed
 * before auto-retry, so it sits between auto-retry and the network and sees each 429 that
 * auto-retry then waits out, not only the last one.
 */
export function countRateLimits(onRateLimited: (retryAfterMs: number) => void): Transformer {
  return async (prev, method, payload, signal) => {
    const result = await prev(method, payload, signal);
    if (!result.ok && result.error_code === 429) onRateLimited(retryAfterMsOf(result.parameters));
    return result;
  };
}
