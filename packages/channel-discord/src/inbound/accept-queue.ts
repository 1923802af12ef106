import { setTimeout as sleep } from 'node:timers/promises';
import type { InboundMessage, Ingress, IngressResult, Logger } from '@switchboard/core';

/**
 * Hands gateway messages to the ingress one at a time, in arrival order. The gateway pushes
 * events and never redelivers them, so a message the ingress refuses (queue full) is retried here
 * after the wait it asks for, and the messages behind it wait too, keeping each chat in order.
 */
export interface AcceptQueue {
  /** Queues `message`; `deliveryId` is Discord's message id, so a repeated MESSAGE_CREATE is a duplicate. */
  push(message: InboundMessage, deliveryId: string): void;
  /**
   * Stops waiting between retries: every queued message still gets one more try, and those
   * refused again are abandoned (logged). Resolves when the queue is empty.
   */
  stop(): Promise<void>;
}

export function createAcceptQueue(ingress: Ingress, logger: Logger): AcceptQueue {
  const stopping = new AbortController();
  let tail: Promise<void> = Promise.resolve();
  let abandoned = 0;

  async function accept(message: InboundMessage, deliveryId: string): Promise<void> {
    const log = logger.child({ messageId: message.id, platformMessageId: deliveryId });
    for (;;) {
      let result: IngressResult;
      try {
        result = await ingress.accept(message, deliveryId);
      } catch (err) {
        log.error({ err }, 'message could not be accepted');
        return;
      }
      if (result.status !== 'refused') {
        log.debug({ result: result.status }, 'message accepted');
        return;
      }
      if (stopping.signal.aborted) {
        abandoned += 1;
        return;
      }
      log.warn(
        { reason: result.reason, retryAfterMs: result.retryAfterMs },
        'ingress refused the message: retrying',
      );
      await sleep(result.retryAfterMs, undefined, { signal: stopping.signal }).catch(() => undefined);
    }
  }

  return {
    push(message, deliveryId) {
      tail = tail.then(() => accept(message, deliveryId));
    },
    async stop() {
      stopping.abort();
      await tail;
      if (abandoned > 0) logger.warn({ abandoned }, 'messages not accepted before stop were abandoned');
    },
  };
}
