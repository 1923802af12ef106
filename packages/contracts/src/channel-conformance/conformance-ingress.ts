import { type IngressResult, SwitchboardError } from '@switchboard/core';
import { recordingIngress } from '../recording-ingress.js';

/** How the conformance ingress answers the next `accept` calls. */
export type IngressMode =
  /** Queues (the default); a delivery id seen before is a duplicate, as the pool answers. */
  | 'queue'
  /** Refuses: the queue is full, try again after `REFUSAL_RETRY_AFTER_MS`. */
  | 'refuse'
  /** Throws a retryable SB_STORE_UNAVAILABLE, as a store that is down. */
  | 'fail'
  /** Waits until `release()`, then queues. */
  | 'hold';

/** Short, so that a channel retrying a refusal itself does so within the check. */
export const REFUSAL_RETRY_AFTER_MS = 50;

/**
 * The ingress the conformance checks start adapters with: `recordingIngress` deduplicating by
 * delivery id (what the pool's enqueue does, keyed `<channel>:<delivery id>`), so that
 * `queued` holds each message the gateway would run once, whatever was redelivered.
 */
export function conformanceIngress() {
  const seen = new Set<string>();
  let mode: IngressMode = 'queue';
  let releaseHeld: () => void = () => {};
  let held: Promise<void> = Promise.resolve();
  const queued: string[] = [];
  const recorded = recordingIngress(async (message, deliveryId): Promise<IngressResult> => {
    if (mode === 'refuse') {
      return { status: 'refused', reason: 'queue_full', retryAfterMs: REFUSAL_RETRY_AFTER_MS };
    }
    if (mode === 'fail') {
      throw new SwitchboardError('SB_STORE_UNAVAILABLE', {
        message: 'store unavailable (conformance check)',
        retryable: true,
        retryAfterMs: REFUSAL_RETRY_AFTER_MS,
      });
    }
    if (mode === 'hold') await held;
    const key = deliveryId === undefined ? undefined : `${message.channel}:${deliveryId}`;
    if (key !== undefined && seen.has(key)) return { status: 'duplicate' };
    if (key !== undefined) seen.add(key);
    queued.push(message.platform_message_id);
    return {
      status: 'queued',
      pipeline: 'conformance',
      session: `${message.channel}:${message.chat.id}`,
      rule: null,
    };
  });
  return {
    ...recorded,
    /** The platform message ids queued, in order: each once per message the gateway would run. */
    queued,
    /** Switches how the next `accept` calls answer. */
    answer(next: IngressMode): void {
      mode = next;
      if (next === 'hold') held = new Promise((resolve) => (releaseHeld = resolve));
    },
    /** Lets held `accept` calls go on (and queue); later ones queue too. */
    release(): void {
      mode = 'queue';
      releaseHeld();
    },
  };
}

export type ConformanceIngress = ReturnType<typeof conformanceIngress>;
