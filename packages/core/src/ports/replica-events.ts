/**
 * The engine events replicas sharing a pool hand each other (docs/design.md §5 "Several
 * replicas"): outcomes and turn starts, so that the replica that accepted a message follows it
 * while another one runs its turn, and the replies sent to a session, so that the event streams
 * every replica holds on it see them.
 *
 * Outcomes and turn starts are addressed: each goes to the one replica that follows its message
 * (`InboundMessage.accepted_by`), and one addressed to this replica itself is not published (its
 * channels hear it from the outcome bus and the controller). Replies go to the replicas following
 * their session.
 *
 * Delivery is at most once, and only to replicas listening at the time: no history, no
 * acknowledgement, no retry. A replica never hears its own events, and hears another's in the
 * order that one published them. Publishing never waits for the other replicas and never throws:
 * a failure is logged by the implementation, which owns its connections. A listener that throws
 * is logged too and keeps no other listener from its event.
 *
 * Deliberately left out: any account of a lost event — the accepting replica's waiting request
 * then ends at its timeout, and its status comes from the store, which the replica that ran the
 * turn writes.
 */
import type { SessionReplies } from '../model/message.js';
import type { Outcome } from '../model/outcome.js';
import type { TurnStart } from './query-pool.js';

/** Events replicas sharing a pool hand each other; one instance per replica. */
export interface ReplicaEvents {
  /** This replica's id: the address of the events meant for it (`InboundMessage.accepted_by`). */
  readonly replicaId: string;
  /** Hands `outcome` to replica `to`; nothing when `to` is this replica. */
  publishOutcome(to: string, outcome: Outcome): void;
  /** Hands what `turn` says about its messages (`turnStartOf`) to replica `to`; nothing when `to` is this replica. */
  publishTurnStart(to: string, turn: TurnStart): void;
  /** Hands replies sent to a session to the replicas following it (`followSession`). */
  publishReplies(replies: SessionReplies): void;
  /** Calls `listener` with every outcome another replica hands this one; returns the unsubscribe. */
  subscribeOutcomes(listener: (outcome: Outcome) => void): () => void;
  /** Calls `listener` with every turn start another replica hands this one; returns the unsubscribe. */
  subscribeTurnStarts(listener: (turn: TurnStart) => void): () => void;
  /**
   * Calls `listener` with the replies other replicas publish to one session (of one channel) until
   * the returned function is called. Following may take effect after the call returns: replies
   * published before then may be missed.
   */
  followSession(channel: string, session: string, listener: (replies: SessionReplies) => void): () => void;
}

/**
 * What crosses to the other replicas of a turn start: its id, its pipeline, and each message's id,
 * channel, tenant, generation and rule. A whole `Turn` carries every message's text, which the channels never read.
 */
export function turnStartOf(turn: TurnStart): TurnStart {
  return {
    id: turn.id,
    pipeline: turn.pipeline,
    messages: turn.messages.map(({ message, rule }) => ({
      message: {
        id: message.id,
        channel: message.channel,
        ...(message.tenant === undefined ? {} : { tenant: message.tenant }),
        ...(message.generation === undefined ? {} : { generation: message.generation }),
      },
      ...(rule === undefined ? {} : { rule }),
    })),
  };
}
