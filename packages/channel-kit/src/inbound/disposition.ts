import type { IngressResult } from '@switchboard/core';

/**
 * What a platform is told about one delivery: taken (a 2xx answer, a confirmed offset; `body` is
 * what a webhook answers with, e.g. Slack's URL challenge), or not now, so that the platform
 * delivers it again after `retryAfterMs` (a 503 with `Retry-After`, an unconfirmed offset).
 */
export type Disposition =
  | { acknowledge: true; body?: unknown }
  | {
      acknowledge: false;
      code: 'SB_DRAINING' | 'SB_QUEUE_FULL' | 'SB_STORE_UNAVAILABLE';
      message: string;
      retryAfterMs: number;
    };

/** A delivery taken with an empty answer. */
export const ACKNOWLEDGED: Disposition = Object.freeze({ acknowledge: true });

/**
 * The disposition of what ingress decided: every result but `refused` is final (journaled,
 * duplicate, ignored, discarded) and acknowledged; a refusal (full queue, draining) asks for
 * redelivery after the wait ingress named.
 */
export function dispositionOf(result: IngressResult): Disposition {
  if (result.status !== 'refused') return ACKNOWLEDGED;
  return {
    acknowledge: false,
    code: result.reason === 'draining' ? 'SB_DRAINING' : 'SB_QUEUE_FULL',
    message: `the gateway cannot take it now (${result.reason}); deliver it again later`,
    retryAfterMs: result.retryAfterMs,
  };
}
