import {
  type InboundMessage,
  type Ingress,
  type IngressResult,
  type Logger,
  type SwitchboardError,
  backoffDelayMs,
  isSwitchboardError,
  pause,
} from '@switchboard/core';

/**
 * Hands gateway messages to the ingress one at a time, in arrival order. The gateway pushes
 * events and never redelivers them, so a message the ingress refuses (queue full, draining) is
 * retried here after the wait it asks for, and the messages behind it wait too, keeping each chat
 * in order. So is one whose accept fails with a retryable `SB_STORE_UNAVAILABLE` (Redis away,
 * the audit outbox full): it is kept and tried again with a growing wait (from the error's
 * `retryAfterMs`, doubling, at most `STORE_RETRY.maxDelayMs`) until the store answers. A message
 * that cannot be accepted in the end is recorded as dropped (`ingress.drop`), never lost without
 * an outcome: `refused` when the ingress still refuses it at stop, `ingress_failed` (with the
 * store's error) when the store still fails at stop or the failure is not retryable.
 *
 * Held in memory only: a process killed while messages wait here loses them without an outcome
 * (Discord will not send them again). Bounded: while the ingress keeps refusing or the store
 * keeps failing every message waits here, so past `maxWaiting` a new message is recorded
 * `dropped/refused` at once rather than held without limit in memory.
 */
export interface AcceptQueue {
  /** Queues `message`; `deliveryId` is Discord's message id, so a repeated MESSAGE_CREATE is a duplicate. */
  push(message: InboundMessage, deliveryId: string): void;
  /**
   * Stops waiting between retries: every queued message still gets one more try, and those
   * refused again are dropped (`refused`). Once the store fails during the stop, the messages
   * still queued are dropped (`ingress_failed`) without a try each, so that a store that hangs
   * does not hold the shutdown for a command timeout per message. Resolves when the queue is empty.
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

/**
 * The waits between tries of a message the store failed: from the error's `retryAfterMs` (or
 * the base when it names none), doubling, capped so that a store back after a long outage is
 * found within half a minute.
 */
const STORE_RETRY = { baseDelayMs: 1000, maxDelayMs: 30_000 };

/** A store failure worth waiting out: the store says it may answer later. */
function isRetryableStoreFailure(err: unknown): err is SwitchboardError {
  return isSwitchboardError(err, 'SB_STORE_UNAVAILABLE') && err.retryable;
}

export function createAcceptQueue(
  ingress: Ingress,
  logger: Logger,
  options: AcceptQueueOptions = {},
): AcceptQueue {
  const maxWaiting = options.maxWaiting ?? DEFAULT_MAX_WAITING;
  const stopping = new AbortController();
  let tail: Promise<void> = Promise.resolve();
  let refusedAtStop = 0;
  /** The store's failure met during the stop: the messages after it are dropped untried. */
  let storeFailedAtStop: SwitchboardError | undefined;
  let failedAtStop = 0;
  let waiting = 0;
  /** Messages dropped since the queue last had room: logged once per full spell, not each. */
  let droppedWhileFull = 0;

  async function accept(message: InboundMessage, deliveryId: string): Promise<void> {
    const log = logger.child({ messageId: message.id, platformMessageId: deliveryId });
    /** Tries of this message the store failed in a row. */
    let storeFailures = 0;
    for (;;) {
      if (storeFailedAtStop !== undefined) {
        failedAtStop += 1;
        ingress.drop(message, 'ingress_failed', storeFailedAtStop);
        return;
      }
      let result: IngressResult;
      try {
        result = await ingress.accept(message, deliveryId);
      } catch (err) {
        if (!isRetryableStoreFailure(err)) {
          // Not a store that may come back (a bug, a corrupt journal): retrying would hold every
          // message behind this one for nothing; Discord will not send it again, so it ends here.
          log.error({ err }, 'message could not be accepted: dropped');
          ingress.drop(message, 'ingress_failed', err);
          return;
        }
        if (stopping.signal.aborted) {
          // Dropped at the top of the loop, as every message after it.
          storeFailedAtStop = err;
          continue;
        }
        // Kept here, in memory only, and tried again; the messages behind it wait, keeping each
        // chat in order. Had the store taken it after all (its answer lost to a timeout), the
        // retry finds Discord's message id as delivery key and answers duplicate: it runs once.
        storeFailures += 1;
        const retryInMs = backoffDelayMs(storeFailures, {
          baseDelayMs: err.retryAfterMs ?? STORE_RETRY.baseDelayMs,
          maxDelayMs: STORE_RETRY.maxDelayMs,
        });
        log.warn({ err, retryInMs, failures: storeFailures }, 'store unavailable: message kept, retrying');
        await pause(retryInMs, stopping.signal);
        continue;
      }
      if (result.status !== 'refused') {
        if (storeFailures > 0)
          log.info({ result: result.status, storeFailures }, 'store answers again: message accepted');
        else log.debug({ result: result.status }, 'message accepted');
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
      if (failedAtStop > 0) {
        logger.error(
          { err: storeFailedAtStop, dropped: failedAtStop },
          'messages the store could not take until stop were dropped',
        );
      }
    },
  };
}
