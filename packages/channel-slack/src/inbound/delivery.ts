import type { IngressResult } from '@switchboard/core';

/**
 * Where the channel's Bolt listener leaves what ingress decided, so that the receiver can answer
 * Slack accordingly: the HTTP status of an Events API request, or whether a Socket Mode envelope
 * is acknowledged. It travels in Bolt's `customProperties`, which become the listener's `context`.
 */
export interface Delivery {
  result?: IngressResult;
}

/** The `context` key that carries the `Delivery`. */
export const DELIVERY_KEY = 'switchboardDelivery';
