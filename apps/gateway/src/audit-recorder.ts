import type { AuditConfig } from '@switchboard/config';
import {
  type AuditLog,
  type DeadLetterPayload,
  type Logger,
  type Outcome,
  newMessageId,
} from '@switchboard/core';
import { keptMessage, keptText } from './stored-text.js';

/** Outcomes that never reach the audit log: success and redelivery are only counted. */
const NOT_AUDITED = new Set(['completed', 'duplicate']);

/**
 * Writes audited outcomes (docs/design.md §2 "Outcomes & audit") to the audit log. A dead letter keeps
 * its message as payload so it can be replayed, cut as `audit.store_text` says (then it is not
 * replayable, see stored-text.ts). A failed write is logged, never thrown back into
 * the message flow. An outcome recorded again because the commit ending its message failed is
 * written once.
 */
export function createAuditRecorder(options: { auditLog: AuditLog; config: AuditConfig; logger: Logger }) {
  const { auditLog, config } = options;
  const logger = options.logger.child({ component: 'audit' });

  /**
   * Per message and outcome, whether its record landed (resolves true) while the commit that ends
   * the message is not known to have succeeded. When that commit fails, the settlement is written
   * again and the outcome recorded again (`OutcomeSink.record`): a record that landed on its own
   * (a failed group commit runs its writes again one by one; an audit log in another database)
   * must not be written a second time. Emptied as those commits succeed.
   */
  const uncommitted = new Map<string, Promise<boolean>>();

  function record(outcome: Outcome, committed?: Promise<boolean>): void {
    if (NOT_AUDITED.has(outcome.kind)) return;
    if (outcome.kind === 'ignored' && !config.recordIgnored) return;
    if (committed === undefined) {
      append(outcome).catch(() => {});
      return;
    }
    const key = `${outcome.message.id}:${outcome.kind}`;
    const earlier = uncommitted.get(key);
    const appended = () =>
      append(outcome).then(
        () => true,
        () => false,
      );
    // The first write is issued at once, in the tick of the commit it joins.
    const landed = earlier === undefined ? appended() : earlier.then((done) => done || appended());
    uncommitted.set(key, landed);
    committed.then(
      (ended) => {
        if (ended && uncommitted.get(key) === landed) uncommitted.delete(key);
      },
      () => {},
    );
  }

  /** Writes `outcome`'s record; a failed write is logged, and rejects for `record` alone. */
  function append(outcome: Outcome): Promise<void> {
    const { message } = outcome;
    const kept = outcome.kind === 'dead_lettered' ? keptMessage(message, config.storeText) : null;
    const payload: DeadLetterPayload | null =
      kept !== null
        ? {
            message: kept.message,
            replayable: kept.whole,
            session: outcome.session,
            pipeline: outcome.pipeline ?? '',
            routedByRule: outcome.rule !== undefined,
            rule: outcome.rule,
            attempt: 0,
            acceptedAt: outcome.at,
            // The replies are as private as the text, and `store_text` cuts texts, not replies:
            // they are kept only under `full`. Under a length, a replay asks the pipeline again.
            ...(config.storeText === 'full' && outcome.undelivered !== undefined
              ? { undelivered: outcome.undelivered }
              : {}),
          }
        : null;
    return auditLog
      .append({
        id: newMessageId(),
        at: outcome.at,
        outcome: outcome.kind,
        reason: outcome.reason ?? null,
        rule: outcome.rule ?? null,
        channel: message.channel,
        platform: message.platform,
        session: outcome.session,
        chat_type: message.chat.type,
        chat_id: message.chat.id,
        sender_id: message.sender.id,
        sender_name: message.sender.name ?? null,
        pipeline: outcome.pipeline ?? null,
        message_id: message.id,
        platform_message_id: message.platform_message_id,
        text: keptText(message.text, config.storeText),
        error: outcome.error ? `${outcome.error.code}: ${outcome.error.message}` : null,
        payload,
        replayed_at: null,
      })
      .catch((err: unknown) => {
        logger.error({ err, messageId: message.id, outcome: outcome.kind }, 'audit write failed');
        throw err;
      });
  }

  return { record };
}
