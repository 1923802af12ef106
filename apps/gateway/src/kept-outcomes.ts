import type { Config } from '@switchboard/config';
import {
  type KeptOutcome,
  type Outcome,
  type OutcomeBus,
  type SecretMasker,
  maskedOutcome,
} from '@switchboard/core';
import type { RedisKeptOutcomes } from '@switchboard/store-redis';
import { isAudited } from './audit-recorder.js';
import { keptMessage } from './stored-text.js';

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
      const kept = mask === undefined ? outcome : maskedOutcome(outcome, mask);
      // What its records need, no more: they ride in the settling script's arguments and stay in
      // Redis until forgotten. The text as the audit keeps it (`store_text`; cut, the recorded
      // dead letter is not replayable); a given-up delivery's replies once, in `undelivered`, and
      // only where the audit keeps them (`full`) — its status shows none of them.
      const { message, whole } = keptMessage(outcome.message, config.audit.storeText);
      const { replies: _replies, undelivered, ...rest } = kept;
      const givenUp = outcome.reason === 'delivery_failed';
      return JSON.stringify({
        ...rest,
        message,
        ...(whole ? {} : { textCut: true }),
        ...(givenUp || kept.replies === undefined ? {} : { replies: kept.replies }),
        ...(undelivered !== undefined && config.audit.storeText === 'full' ? { undelivered } : {}),
      });
    },
    wasKept: (outcome) => settled(outcome) && hasRecords(outcome),
  };
}

/**
 * How this replica records an outcome whose settling replica did not (`RedisKeptOutcomes.start`):
 * through the writers of its records only (`OutcomeBus.recover`), and only for a channel it runs —
 * of another it cannot tell whether a status is to be written, so it leaves the outcome to a
 * replica that runs it (false).
 */
export function recoverKeptOutcome(config: Config, outcomes: Pick<OutcomeBus, 'recover'>) {
  const channels = new Set(config.channels.map((channel) => channel.id));
  return (outcome: Outcome): boolean => {
    if (!channels.has(outcome.message.channel)) return false;
    outcomes.recover(outcome);
    return true;
  };
}

/**
 * The outcome bus's `onRecorded` with a shared store: lets go of an outcome its settlement kept
 * once every record of it landed (`RedisKeptOutcomes.forget`).
 */
export function forgetWhenRecorded(policy: KeptOutcomePolicy, kept: Pick<RedisKeptOutcomes, 'forget'>) {
  return (outcome: Outcome): void => {
    if (policy.wasKept(outcome)) kept.forget(outcome);
  };
}
