import {
  type Delivery,
  type DeliveryMessage,
  type MessageStatus,
  type Outcome,
  type Reply,
  tenantOfMessage,
  traceIdOf,
} from '@switchboard/core';

/** Where the replies of a message with this outcome stand. */
function deliveryAfter(outcome: Outcome, base: MessageStatus): MessageStatus['delivery'] {
  if (outcome.kind === 'completed') return (outcome.replies?.length ?? 0) > 0 ? 'delivered' : null;
  // Given up by the outbox (a dead letter), or left in it at shutdown.
  if (outcome.reason === 'delivery_failed' || base.delivery === 'pending') return 'failed';
  return base.delivery;
}

/**
 * A message of `channel` known to be accepted, nothing more: queued, with no route yet. `tenant`:
 * its `InboundMessage.tenant` (absent for `default`).
 */
export function emptyStatus(
  id: string,
  channel: string,
  tenant: string | undefined,
  updatedAt: number,
  generation = 0,
): MessageStatus {
  return {
    id,
    channel,
    tenant: tenantOfMessage({ tenant }),
    generation,
    status: 'queued',
    pipeline: null,
    rule: null,
    turn: null,
    replies: [],
    delivery: null,
    error: null,
    trace_id: null,
    updated_at: updatedAt,
  };
}

/**
 * The replies a dead letter's outcome carries: the pipeline's `dead_letter_reply`, on its way
 * through the outbox to the first message of the turn (core `turn-settlement.ts`). Every writer of
 * the final status — the settling replica, the one recovering a kept outcome — writes them, so
 * that the status holds them whichever of its writes and the reply's send lands first.
 */
function deadLetterRepliesOf(outcome: Outcome): readonly Reply[] {
  const apology =
    outcome.kind === 'dead_lettered' &&
    (outcome.reason === 'fatal_error' || outcome.reason === 'max_attempts');
  return apology ? (outcome.replies ?? []) : [];
}

/**
 * `held` with `replies` added after it, unless it already ends with them: a dead-letter reply
 * reaches a status twice, from its outcome and from its send, in either order (and twice from
 * its send where a crash repeats it), and shows once. Replies carry no id; the same replies at
 * the tail are the same send. Returns `held` itself when nothing is added.
 */
function withNewReplies(held: readonly Reply[], replies: readonly Reply[]): readonly Reply[] {
  if (replies.length === 0) return held;
  if (replies.length <= held.length) {
    const tail = held.slice(held.length - replies.length);
    if (JSON.stringify(tail) === JSON.stringify(replies)) return held;
  }
  return [...held, ...replies];
}

/**
 * The replies `base` holds that were delivered: none while its delivery is `pending`, for a
 * pending status holds its answer alone (`answeredStatus`), which an outcome other than
 * `completed` says was never delivered (given up, or left in the outbox at shutdown).
 */
function deliveredRepliesOf(base: MessageStatus): readonly Reply[] {
  return base.delivery === 'pending' ? [] : base.replies;
}

/** The final status `outcome` leaves a message in, over what `current` knew of it, as of `at`. */
export function finalStatus(outcome: Outcome, current: MessageStatus | null, at: number): MessageStatus {
  const { message } = outcome;
  const base = current ?? emptyStatus(message.id, message.channel, message.tenant, at);
  const failed = outcome.kind === 'dropped' || outcome.kind === 'dead_lettered';
  const error = outcome.error === undefined ? null : `${outcome.error.code}: ${outcome.error.message}`;
  return {
    id: message.id,
    channel: message.channel,
    tenant: tenantOfMessage(message),
    generation: message.generation ?? 0,
    status: outcome.kind,
    pipeline: outcome.pipeline ?? base.pipeline,
    rule: outcome.rule ?? base.rule,
    turn: outcome.turnId ?? base.turn,
    // The outcome carries the turn's replies, which `send` already appended for the first message.
    replies:
      outcome.kind === 'completed'
        ? (outcome.replies ?? base.replies)
        : [...withNewReplies(deliveredRepliesOf(base), deadLetterRepliesOf(outcome))],
    delivery: deliveryAfter(outcome, base),
    // Without an error, the reason (queue_overflow, shutdown…) is the only account of a failure.
    error: error ?? (failed ? (outcome.reason ?? null) : null),
    trace_id: traceIdOf(outcome.message.traceparent) ?? base.trace_id,
    updated_at: at,
  };
}

/**
 * The status of a message `delivery` answers once its replies are stored and its turn completed,
 * over what `current` knew of it: `completed` with its delivery `pending` and the turn's replies,
 * so that a `completed` status carries its replies on every replica from the first write that
 * says `completed` — this one, by the replica that ran the turn, which may land well before the
 * final status of the replica whose sender delivers them.
 */
export function answeredStatus(
  delivery: Delivery,
  answered: DeliveryMessage,
  current: MessageStatus | null,
): MessageStatus {
  const { message } = answered;
  const base = current ?? emptyStatus(message.id, delivery.channel, message.tenant, delivery.createdAt);
  return {
    ...base,
    generation: message.generation ?? 0,
    status: 'completed',
    pipeline: answered.pipeline,
    rule: answered.rule ?? null,
    turn: delivery.turnId,
    replies: [...withNewReplies(base.replies, delivery.replies)],
    delivery: 'pending',
    updated_at: delivery.createdAt,
  };
}

/** `status` with `replies` appended (`withNewReplies`), or null when it holds them already. */
export function withReplies(
  status: MessageStatus,
  replies: readonly Reply[],
  at: number,
): MessageStatus | null {
  const held = withNewReplies(status.replies, replies);
  return held === status.replies ? null : { ...status, replies: [...held], updated_at: at };
}
