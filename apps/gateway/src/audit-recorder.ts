import type { AuditConfig } from '@switchboard/config';
import {
  type AuditLog,
  type DeadLetterPayload,
  type Logger,
  type Outcome,
  auditIdOf,
  tenantOfMessage,
} from '@switchboard/core';
import { keptMessage, keptText } from './stored-text.js';

/** Outcomes that never reach the audit log: success and redelivery are only counted. */
const NOT_AUDITED = new Set(['completed', 'duplicate']);

/** Whether `outcome` gets an audit record under `config`. */
export function isAudited(outcome: Outcome, config: AuditConfig): boolean {
  if (NOT_AUDITED.has(outcome.kind)) return false;
  return outcome.kind !== 'ignored' || config.recordIgnored;
}

/**
 * Writes audited outcomes (docs/design.md §2 "Outcomes & audit") to the audit log. A dead letter keeps
 * its message as payload so it can be replayed, cut as `audit.store_text` says (then it is not
 * replayable, see stored-text.ts). A failed write is logged, never thrown back into
 * the message flow. The record's id is its end's (`auditIdOf`): an outcome recorded again — its
 * settlement written again after a failed commit, its message run again after a crash, an
 * outcome recovered from where its settlement kept it — is the same record, which the log keeps
 * once.
 */
export function createAuditRecorder(options: { auditLog: AuditLog; config: AuditConfig; logger: Logger }) {
  const { auditLog, config } = options;
  const logger = options.logger.child({ component: 'audit' });

  /** Writes the record of an audited outcome; resolves whether it landed, undefined for none. */
  function record(outcome: Outcome): Promise<boolean> | undefined {
    if (!isAudited(outcome, config)) return undefined;
    return append(outcome).then(
      () => true,
      () => false,
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
            replayable: kept.whole && outcome.textCut !== true,
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
        id: auditIdOf(outcome),
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
        tenant: tenantOfMessage(message),
      })
      .catch((err: unknown) => {
        logger.error({ err, messageId: message.id, outcome: outcome.kind }, 'audit write failed');
        throw err;
      });
  }

  return { record };
}
