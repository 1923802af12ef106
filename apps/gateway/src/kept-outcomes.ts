import type { Config } from '@switchboard/config';
import { type KeptOutcome, type Outcome, type SecretMasker, maskedOutcome } from '@switchboard/core';
import { isAudited } from './audit-recorder.js';

/** Which outcomes a shared store keeps beside their settlement, and in which form. */
export interface KeptOutcomePolicy {
  /** The form kept: the outcome as its listeners hear it (error masked), without the raw event. */
  keep: KeptOutcome;
  /** Whether a settlement kept `outcome`: then it is forgotten once its records landed. */
  wasKept(outcome: Outcome): boolean;
}

/**
 * With `store: redis`, the outcomes whose records — an audit record, an HTTP channel's final
 * status — must survive the death of the replica that settled them (docs/design.md §5 "Outcomes
 * kept with their settlement"). Outcomes only counted (a Telegram message completed) are not
 * kept: their settlement costs nothing more.
 */
export function keptOutcomePolicy(config: Config, mask?: SecretMasker): KeptOutcomePolicy {
  const httpChannels = new Set(
    config.channels.filter((channel) => channel.type === 'openapi').map((channel) => channel.id),
  );
  const hasRecords = (outcome: Outcome) =>
    isAudited(outcome, config.audit) ||
    (outcome.kind !== 'duplicate' && httpChannels.has(outcome.message.channel));
  // Outcomes of settlements (a turn's, a delivery's, an overflow at enqueue); those recorded at
  // ingress (discarded, ignored, refused) end with no settlement to keep them.
  const settled = (outcome: Outcome) =>
    outcome.turnId !== undefined || outcome.deliveryId !== undefined || outcome.reason === 'queue_overflow';
  return {
    keep(outcome) {
      if (!hasRecords(outcome)) return null;
      const { raw: _raw, ...message } = outcome.message;
      const kept = mask === undefined ? outcome : maskedOutcome(outcome, mask);
      return JSON.stringify({ ...kept, message });
    },
    wasKept: (outcome) => settled(outcome) && hasRecords(outcome),
  };
}
