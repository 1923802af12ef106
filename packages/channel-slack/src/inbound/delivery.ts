import type { IngressDropReason, IngressResult } from '@switchboard/core';

/**
 * Slack retries an event it could not deliver at most 3 times (at once, after about 1 minute,
 * after about 5 minutes), numbered 1..3 in `X-Slack-Retry-Num` (Events API) or `retry_attempt`
 * (Socket Mode); after the third it gives the event up.
 */
export const SLACK_MAX_RETRIES = 3;

/** Whether Slack will never send this event again if it is not acknowledged now. */
export function isLastSlackDelivery(retryNum: number | undefined): boolean {
  return (retryNum ?? 0) >= SLACK_MAX_RETRIES;
}

/**
 * Where the channel's Bolt listener leaves what ingress decided, so that the receiver can answer
 * Slack accordingly: the HTTP status of an Events API request, or whether a Socket Mode envelope
 * is acknowledged. It travels in Bolt's `customProperties`, which become the listener's `context`.
 */
export interface Delivery {
  /** Set by the receiver: Slack's last try, so a message not accepted now is dropped, not left to a retry. */
  readonly last: boolean;
  /** What ingress decided, when it decided. */
  result?: IngressResult;
  /** Set by the listener when it recorded the message as dropped: the event is acknowledged. */
  dropped?: IngressDropReason;
}

/** The `context` key that carries the `Delivery`. */
export const DELIVERY_KEY = 'switchboardDelivery';
