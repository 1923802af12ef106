import {
  type AuditLog,
  type DeadLetterPayload,
  type Delivery,
  type DeliveryKey,
  HANDOFF,
  type InboundMessage,
  type Logger,
  type OutcomeSink,
  type QueryPool,
  type QueuedMessage,
  type ReplyOutbox,
  SwitchboardError,
  recordOverflowed,
} from '@switchboard/core';

/** What `POST /admin/dead-letters/{id}/replay` answers. */
export interface ReplayResult {
  id: string;
  message_id: string;
  /** `queued`: the message runs again; `sending`: its stored replies are sent again. */
  status: 'queued' | 'sending';
}

export interface DeadLetterReplayOptions {
  auditLog: AuditLog;
  pool: QueryPool;
  /** Where a `delivery_failed` dead letter's replies go again. */
  outbox: ReplyOutbox;
  outcomes: OutcomeSink;
  logger: Logger;
  /** How long a replay's claim is remembered, in ms: as long as a dead letter is kept (`audit.retention_days`). */
  claimTtlMs: number;
  /**
   * Where a message whose pipeline is no longer configured (`pipeline_removed`) goes now: the
   * routing in force decides; null when the pipeline is still configured.
   */
  rerouted(queued: QueuedMessage): Pick<QueuedMessage, 'pipeline' | 'rule'> | null;
  now?: () => number;
}

/**
 * The pool's delivery key of a dead letter's replay. Enqueuing under it is the replay's claim:
 * the key is marked in the same atomic write that journals the message, so of concurrent replays
 * exactly one is queued, a refused one (queue full, draining) leaves the dead letter replayable,
 * and a crash leaves either both the claim and the queued message or neither.
 */
export function replayDeliveryKey(auditId: string, claimTtlMs: number): DeliveryKey {
  return { key: `replay:${auditId}`, ttlMs: claimTtlMs };
}

/**
 * `message` accepted again by a replay: one generation later, so that the statuses of the replay
 * replace those of the run that was dead-lettered (core `statusVersion`), and followed by no
 * replica (no request waits for a replay), so that its events are relayed to none.
 */
function nextGeneration(message: InboundMessage): InboundMessage {
  const { accepted_by: _acceptedBy, ...replayed } = message;
  return { ...replayed, generation: (message.generation ?? 0) + 1 };
}

/**
 * The delivery that re-sends a `delivery_failed` dead letter's replies. Its id is derived from
 * the audit id and remembered by the outbox for `claimTtlMs` after it ended, so adding it twice
 * (concurrent replays, a replay whose mark was lost) stores and sends it once, also after the
 * first was sent. Like any answer it ends its message: `completed` once sent, or a new
 * `delivery_failed` dead letter (replayable in turn) once given up, never silently.
 */
export function replayDelivery(
  auditId: string,
  payload: DeadLetterPayload & { undelivered: NonNullable<DeadLetterPayload['undelivered']> },
  nowMs: number,
  claimTtlMs: number,
): Delivery {
  const { origin, replies, draft } = payload.undelivered;
  const { session, pipeline, rule, attempt } = payload;
  const message = nextGeneration(payload.message);
  return {
    id: `replay:${auditId}`,
    channel: origin.channel,
    chat: payload.session,
    origin,
    messages: [{ message, session, pipeline, ...(rule === undefined ? {} : { rule }), attempt }],
    turnId: null,
    replies,
    ...(draft === undefined ? {} : { draft }),
    ownsOutcome: true,
    // An operator's reply (its message is the operator's, queued for `__handoff__`) ends as one.
    ...(pipeline === HANDOFF ? { operator: message.sender.name ?? message.sender.id } : {}),
    createdAt: nowMs,
    attempts: 0,
    notBefore: nowMs,
    rememberForMs: claimTtlMs,
  };
}

/**
 * Replays dead letters (docs/design.md §7): puts the message back in the pool as a new first attempt of
 * a new request (`QueuedMessage.replayOf`: a backend deduplicating on the turn id runs it), at
 * the end of its session's queue, also in the journal.
 * The dead letter is marked replayed only after its enqueue; a crash in between leaves it listed,
 * and the next replay finds the claim taken, marks it then and answers 409.
 */
export function createDeadLetterReplay(
  options: DeadLetterReplayOptions,
): (id: string) => Promise<ReplayResult> {
  const { auditLog, pool, outcomes } = options;
  const now = options.now ?? Date.now;
  const logger = options.logger.child({ component: 'replay' });

  const alreadyReplayed = (id: string) =>
    new SwitchboardError('SB_HTTP_CONFLICT', {
      message: `dead letter ${id} was already replayed`,
      details: { id },
    });

  return async function replay(id) {
    const record = await auditLog.getDeadLetter(id);
    if (record?.payload == null) {
      throw new SwitchboardError('SB_DEAD_LETTER_NOT_FOUND', {
        message: `no dead letter with id ${id}`,
        details: { id },
      });
    }
    const { replayable, ...queued } = record.payload;
    if (!replayable) {
      throw new SwitchboardError('SB_DEAD_LETTER_NOT_REPLAYABLE', {
        message: `dead letter ${id} was stored without its whole text (audit.store_text) and cannot be replayed`,
        details: { id },
      });
    }
    if (record.replayed_at !== null) throw alreadyReplayed(id);

    // The pipeline answered; only the sending failed: the answer is sent again, not asked again.
    if (record.reason === 'delivery_failed' && record.payload.undelivered !== undefined) {
      const added = await options.outbox.add(
        replayDelivery(
          id,
          { ...record.payload, undelivered: record.payload.undelivered },
          now(),
          options.claimTtlMs,
        ),
      );
      await auditLog.markReplayed(id, now());
      if (added === 'duplicate') throw alreadyReplayed(id);
      logger.info({ auditId: id, messageId: record.message_id }, 'dead letter replayed: sending its replies');
      return { id, message_id: record.message_id, status: 'sending' };
    }

    // An operator's reply (a failed delivery of `__handoff__`'s) has no pipeline to ask again:
    // only its kept text could be sent again. A user's message routed there is queued again.
    if (queued.pipeline === HANDOFF && record.reason === 'delivery_failed') {
      throw new SwitchboardError('SB_DEAD_LETTER_NOT_REPLAYABLE', {
        message: `dead letter ${id} is an operator's reply whose text was not kept (audit.store_text: full keeps it): send it again from the conversation`,
        details: { id },
      });
    }
    // A new request under the same message id: `replayOf` gives its turns their own id.
    const result = await pool.enqueue(
      {
        ...queued,
        ...options.rerouted(queued),
        message: nextGeneration(queued.message),
        attempt: 0,
        acceptedAt: now(),
        replayOf: id,
      },
      replayDeliveryKey(id, options.claimTtlMs),
    );
    if (!result.accepted) {
      if (result.reason !== 'duplicate') {
        throw new SwitchboardError(result.reason === 'draining' ? 'SB_DRAINING' : 'SB_QUEUE_FULL', {
          retryAfterMs: result.retryAfterMs,
        });
      }
      // Another replay holds the claim and queued the message. Marking here too repairs a replay
      // whose process died between its enqueue and its mark; whichever mark lands first wins,
      // and either way the dead letter leaves the list.
      await auditLog.markReplayed(id, now());
      throw alreadyReplayed(id);
    }
    recordOverflowed(outcomes, result.overflowed, now());
    await auditLog.markReplayed(id, now());
    logger.info({ auditId: id, messageId: record.message_id }, 'dead letter replayed');
    return { id, message_id: record.message_id, status: 'queued' };
  };
}
