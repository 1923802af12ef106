import { type InboundMessage, type Ingress, type IngressResult, type Logger, pause } from '@switchboard/core';

/**
 * Hands gateway messages to the ingress one at a time, in arrival order. The gateway pushes
 * events and never redelivers them, so a message the ingress refuses (queue full, draining) is
 * retried here after the wait it asks for, and the messages behind it wait too, keeping each chat
 * in order. A message that cannot be accepted in the end is recorded as dropped (`ingress.drop`),
 * never lost without an outcome.
 *
 * Bounded: while the ingress keeps refusing (queue full for minutes) every message waits here, so
 * past `maxWaiting` a new message is recorded `dropped/refused` at once rather than held without
 * limit in memory.
 */
export interface AcceptQueue {
  /** Queues `message`; `deliveryId` is Discord's message id, so a repeated MESSAGE_CREATE is a duplicate. */
  push(message: InboundMessage, deliveryId: string): void;
  /**
   * Stops waiting between retries: every queued message still gets one more try, and those
   * refused again are dropped (`refused`). Resolves when the queue is empty.
   */
  stop(): Promise<void>;
}

/** Options of `createAcceptQueue`. */
export interface AcceptQueueOptions {
  /** Messages held (waiting, or being accepted) before new ones are dropped. Default 2000. */
  maxWaiting?: number;
}

/** Enough for a burst while the pool asks for a short wait; small next to the process's memory. */
const DEFAULT_MAX_WAITING = 2000;

export function createAcceptQueue(
  ingress: Ingress,
  logger: Logger,
  options: AcceptQueueOptions = {},
): AcceptQueue {
  const maxWaiting = options.maxWaiting ?? DEFAULT_MAX_WAITING;
  const stopping = new AbortController();
  let tail: Promise<void> = Promise.resolve();
  let refusedAtStop = 0;
  let waiting = 0;
  /** Messages dropped since the queue last had room: logged once per full spell, not each. */
  let droppedWhileFull = 0;

  async function accept(message: InboundMessage, deliveryId: string): Promise<void> {
    const log = logger.child({ messageId: message.id, platformMessageId: deliveryId });
    for (;;) {
      let result: IngressResult;
      try {
        result = await ingress.accept(message, deliveryId);
      } catch (err) {
        // The journal (or dedup store) failed. Retrying could hold every message behind this one
        // for as long as the failure lasts; Discord will not send it again, so it ends here.
        log.error({ err }, 'message could not be accepted: dropped');
        ingress.drop(message, 'ingress_failed', err);
        return;
      }
      if (result.status !== 'refused') {
        log.debug({ result: result.status }, 'message accepted');
        return;
      }
      if (stopping.signal.aborted) {
        refusedAtStop += 1;
        ingress.drop(message, 'refused');
        return;
      }
      log.warn(
        { reason: result.reason, retryAfterMs: result.retryAfterMs },
        'ingress refused the message: retrying',
      );
      await pause(result.retryAfterMs, stopping.signal);
    }
  }

  return {
    push(message, deliveryId) {
      if (waiting >= maxWaiting) {
        if (droppedWhileFull === 0) logger.warn({ maxWaiting }, 'accept queue full: dropping new messages');
        droppedWhileFull += 1;
        ingress.drop(message, 'refused');
        return;
      }
      if (droppedWhileFull > 0) {
        logger.warn({ dropped: droppedWhileFull }, 'accept queue has room again');
        droppedWhileFull = 0;
      }
      waiting += 1;
      // A failure must not break the chain: the messages behind it still need their turn.
      tail = tail
        .then(() => accept(message, deliveryId))
        .catch((err: unknown) => logger.error({ err, messageId: message.id }, 'accept queue failed'))
        .finally(() => {
          waiting -= 1;
        });
    },
    async stop() {
      stopping.abort();
      await tail;
      if (refusedAtStop > 0) {
        logger.warn({ dropped: refusedAtStop }, 'messages refused until stop were dropped');
      }
    },
  };
}
