import { crashPoint } from '../observability/crash-point.js';
import type { Outcome, OutcomeSink } from '../model/outcome.js';
import type { Logger } from '../ports/logger.js';
import type { AddResult, DeliveryClaim, ReplyOutbox } from '../ports/reply-outbox.js';

/** What `sendBeforeStoring` works with; the reply sender passes its own. */
export interface SendBeforeStoringOptions {
  /** An outbox that offers `reserve`, `addEnded` and `addReserved`. */
  outbox: ReplyOutbox;
  outcomes: OutcomeSink;
  logger: Logger;
  /** Sends the delivery once, with its deadline, telling the channel `committed`. */
  send: (committed: Promise<boolean>) => Promise<void>;
  /** The outcomes of the messages the delivery ends as `completed`. */
  completed: () => Outcome[];
  /**
   * Asked when the send failed: the outcomes to end the delivery with instead of storing it to
   * send again (a sender stopped with an outbox that is not durable: `dropped`), or
   * null to store it (`addReserved`).
   */
  unsent?: () => Outcome[] | null;
  /** Called once the delivery is stored ended. */
  delivered: () => void;
}

/**
 * Sends a delivery its outbox reserved before storing it, for a channel whose send waits for the
 * write storing it (`ChannelAdapter.localSend`), then stores it ended (`ReplyOutbox.addEnded`):
 * one write that also takes its messages out of the journal, with the outcome's records issued
 * as one unit with it. The channel and the outcome's listeners tell nobody outside the process
 * before that commit succeeded. So one commit stores the answer and ends the message
 * (docs/design.md §2 "Durability", *Sent before it is stored*). A send or a write that fails
 * stores the delivery in the place it was reserved at (`addReserved`: ahead of what its chat was
 * given meanwhile), to be sent again as any other (a status that already holds the replies takes
 * them once); its outcome is recorded again when that delivery ends — unless its send failed and
 * the caller ends it unsent (`unsent`: a sender stopped with an outbox that is not durable), with
 * those outcomes in the write that stores it ended. Answers `ended`, or the result of that add.
 */
export async function sendBeforeStoring(
  claim: DeliveryClaim,
  options: SendBeforeStoringOptions,
): Promise<AddResult> {
  const { outbox, outcomes, logger } = options;
  const { delivery } = claim;
  const addEnded = outbox.addEnded as NonNullable<ReplyOutbox['addEnded']>;
  const storeAgain = () => (outbox.addReserved as NonNullable<ReplyOutbox['addReserved']>)(claim);
  /** After a failed send: ends the delivery with the outcomes `unsent` gives, or stores it again. */
  const unsentOrStored = async (): Promise<AddResult> => {
    const unsent = options.unsent?.() ?? null;
    if (unsent === null) return storeAgain();
    try {
      await addEnded(claim, () => {
        for (const outcome of unsent) outcomes.record(outcome);
      });
      return 'ended';
    } catch (err) {
      // The reservation still holds (`addEnded` wrote nothing): stored, never left held.
      logger.error({ err, deliveryId: delivery.id }, 'ending an unsent delivery failed: storing it');
      return storeAgain();
    }
  };
  let stored: (ok: boolean) => void = () => {};
  const committed = new Promise<boolean>((resolve) => {
    stored = resolve;
  });
  try {
    await options.send(committed);
  } catch (err) {
    stored(false);
    logger.warn({ err, deliveryId: delivery.id }, 'send failed, storing the delivery to try again');
    return unsentOrStored();
  }
  // A crash from here until the write commits leaves nothing stored: the turn runs again.
  crashPoint('send.after-platform-call');
  const ended = options.completed();
  const written = addEnded(claim, () => {
    for (const outcome of ended) outcomes.record(outcome, committed);
  });
  written.then(
    () => stored(true),
    () => stored(false),
  );
  try {
    await written;
  } catch (err) {
    logger.error(
      { err, deliveryId: delivery.id },
      'storing a sent delivery failed to commit: adding it to send again',
    );
    // It was sent: stored to send again (its status takes the replies once), never ended unsent.
    return storeAgain();
  }
  crashPoint('delivery.after-removal');
  options.delivered();
  return 'ended';
}
