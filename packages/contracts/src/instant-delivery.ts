import {
  createMemoryReplyOutbox,
  createReplySender,
  type Delivery,
  type OutcomeSink,
  type ReplyOutbox,
} from '@switchboard/core';

/** What `instantDelivery` gives a test. */
export interface InstantDelivery {
  /** Hand it to every controller under test: replicas of one test share it, as a shared store. */
  outbox: ReplyOutbox;
  /** Every delivery sent, in the order the sends ended. */
  delivered: Delivery[];
  /** Stops the sender. */
  stop(): Promise<void>;
}

/**
 * A memory outbox drained by a started reply sender whose channels all send at once: for tests of
 * the controller that look at outcomes and at what was delivered, whatever the channel ids.
 */
export function instantDelivery(outcomes: OutcomeSink): InstantDelivery {
  const outbox = createMemoryReplyOutbox();
  const delivered: Delivery[] = [];
  const sender = createReplySender({
    outbox,
    channel: (id) => ({ id, send: async () => {} }),
    policy: () => ({
      sendTimeoutMs: 30_000,
      concurrency: 8,
      maxAgeMs: 3_600_000,
      retry: { baseDelayMs: 1000, maxDelayMs: 30_000 },
    }),
    outcomes,
    observer: {
      deliveryEnded(delivery, result) {
        if (result === 'delivered') delivered.push(delivery);
      },
    },
  });
  sender.start();
  return { outbox, delivered, stop: () => sender.stop({ drainTimeoutMs: 0 }) };
}
