import type { PlatformFailure } from './platform-failure.js';
import { platformMessageOf } from './platform-message.js';
import { retryAfterMs } from './retry-after.js';

/**
 * The failure a non-2xx HTTP answer reports: its status, the wait its `Retry-After` asks for and
 * the platform's message and code from its body (JSON, already parsed; anything else is
 * ignored). The code is the `{ error: { code } }` of Graph (WhatsApp) and the Bot Framework.
 */
export function failureOfHttpStatus(
  status: number,
  headers: Pick<Headers, 'get'>,
  body: unknown,
): PlatformFailure {
  const waitMs = retryAfterMs(headers.get('retry-after'));
  const description = platformMessageOf(body);
  const code = (body as { error?: { code?: unknown } } | null | undefined)?.error?.code;
  return {
    status,
    ...(typeof code === 'number' || typeof code === 'string' ? { code } : {}),
    ...(waitMs === undefined ? {} : { retryAfterMs: waitMs }),
    ...(description === undefined ? {} : { description }),
  };
}
