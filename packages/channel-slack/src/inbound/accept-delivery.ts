import type { InboundMessage, Ingress, IngressResult, Logger } from '@switchboard/core';
import type { Delivery } from './delivery.js';

/**
 * Hands a Slack message to ingress, keyed on the message (`<channel>:<ts>`) rather than
 * event_id: a redelivery has the same message, and so has the `app_mention` twin of a `message`
 * event, which has its own event_id. The decision is left in `delivery` for the receiver.
 *
 * Slack sends again what is not acknowledged, so a refusal (queue full, draining) or a failed
 * journal write normally goes back to it: a 503 or 500, an unacknowledged envelope. On Slack's
 * last try nothing would come back, so the message ends here instead: recorded as dropped
 * (`refused`, or `ingress_failed` with the error) and then acknowledged, so that every message
 * has one outcome. If the process dies between the record and the acknowledgement, the outcome
 * is already written and Slack does not try again.
 */
export async function acceptDelivery(
  ingress: Ingress,
  message: InboundMessage,
  delivery: Delivery,
  logger: Logger,
): Promise<void> {
  const log = { messageId: message.id, platformMessageId: message.platform_message_id };
  let result: IngressResult;
  try {
    // On the last try the pool keeps the message even when full or draining, and still knows it
    // when an earlier try was journaled after its answer went out (a duplicate, not a second).
    result = await ingress.accept(message, message.platform_message_id, { last: delivery.last });
  } catch (err) {
    if (!delivery.last) throw err;
    logger.error({ ...log, err }, 'dropped on slack last retry: ingress failed');
    ingress.drop(message, 'ingress_failed', err);
    delivery.dropped = 'ingress_failed';
    return;
  }
  delivery.result = result;
  if (result.status === 'refused' && delivery.last) {
    logger.warn({ ...log, reason: result.reason }, 'dropped on slack last retry: refused');
    ingress.drop(message, 'refused');
    delivery.dropped = 'refused';
    return;
  }
  logger.debug({ ...log, status: result.status }, 'slack event accepted');
}
