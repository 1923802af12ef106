/**
 * What a channel reports about its platform calls, for the app's metrics
 * (`switchboard_send_wait_seconds`, `switchboard_platform_rate_limited_total`): channels know no
 * metrics library. Calls are synchronous and must not throw.
 */
export interface OutboundObserver {
  /** A send or edit into `channel` waited `waitedMs` for its pacing tokens (0 when it did not). */
  paced(channel: string, waitedMs: number): void;
  /** The platform answered 429 to a call of `channel`, asking to wait `retryAfterMs`. */
  rateLimited(channel: string, retryAfterMs: number): void;
}

/** An observer that ignores everything: channels built without metrics (tests, tools). */
export const IGNORING_OBSERVER: OutboundObserver = Object.freeze({ paced() {}, rateLimited() {} });
