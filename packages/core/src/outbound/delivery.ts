import { type Reply, withoutRaw } from '../model/message.js';
import type { Turn } from '../ports/query-pool.js';
import type { QueuedMessage } from '../model/queued-message.js';
import type { Delivery } from '../ports/reply-outbox.js';

/**
 * How long a turn's delivery id is remembered once it was sent or given up. A turn runs again
 * after a crash between storing its replies and completing, once the gateway is back (SQLite) or
 * its lease ran out (Redis, seconds): within this window that run adds a duplicate, not a second
 * send. An hour covers a restart; a store holds one small record per delivery of the last hour.
 */
const REMEMBERED_FOR_MS = 3_600_000;

/**
 * The delivery of `replies` in answer to `messages` of `turn`, to its session's chat. Its id is
 * derived from the turn id, which is the same on every attempt of the same messages, and the
 * outbox remembers it after it ended: a turn run again after a crash between storing its replies
 * and completing (docs/design.md §2 "Durability") adds a duplicate, not a second delivery,
 * whether the first is still stored or was sent meanwhile.
 */
export function deliveryOf(
  turn: Pick<Turn, 'id' | 'session'>,
  messages: readonly QueuedMessage[],
  replies: readonly Reply[],
  options: { kind: 'answer' | 'dead_letter_reply'; nowMs: number },
): Delivery {
  const first = messages[0];
  if (first === undefined) throw new TypeError(`turn ${turn.id} has no messages to answer`);
  const ownsOutcome = options.kind === 'answer';
  return {
    id: ownsOutcome ? turn.id : `${turn.id}:dead-letter`,
    channel: first.message.channel,
    chat: turn.session,
    origin: withoutRaw(first.message),
    messages: ownsOutcome
      ? messages.map((queued) => ({
          message: withoutRaw(queued.message),
          session: queued.session,
          pipeline: queued.pipeline,
          ...(queued.rule === undefined ? {} : { rule: queued.rule }),
          attempt: queued.attempt,
        }))
      : [],
    turnId: turn.id,
    replies: replies.map((reply) => ({ ...reply })),
    ownsOutcome,
    createdAt: options.nowMs,
    attempts: 0,
    notBefore: options.nowMs,
    rememberForMs: REMEMBERED_FOR_MS,
  };
}
