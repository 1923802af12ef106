import type { InboundMessage, Ingress, IngressDropReason, IngressResult } from '@switchboard/core';

/** A message a channel gave up on, as `Ingress.drop` received it. */
export interface RecordedDrop {
  message: InboundMessage;
  reason: IngressDropReason;
  error?: unknown;
}

/**
 * A fake `Ingress` for channel tests: every `accept` answers `answer(message, deliveryId)` (a
 * refusal, a throw), and what the channel accepted and dropped is recorded, so a test can check
 * that each message it sent ended in one of the two.
 */
export function recordingIngress(
  answer: (message: InboundMessage, deliveryId: string | undefined) => Promise<IngressResult>,
) {
  const accepted: InboundMessage[] = [];
  const drops: RecordedDrop[] = [];
  const ingress: Ingress = {
    accept(message, deliveryId) {
      accepted.push(message);
      return answer(message, deliveryId);
    },
    drop(message, reason, error) {
      drops.push({ message, reason, error });
    },
  };
  return { ingress, accepted, drops };
}
