import type { Delivery, Outcome, PooledMessageState, ReplicaEvents, TurnStart } from '@switchboard/core';

/**
 * Where an engine event happened: on this replica (`local`, the default when a listener is called
 * without one), or on another replica sharing its pool (`relayed`, docs/design.md §5 "Several
 * replicas").
 */
export type EventOrigin = 'local' | 'relayed';

/**
 * The engine events the channel follows; the app wires them to the outcome bus and controller,
 * and with a shared pool to the other replicas' events too (`ReplicaEvents`).
 */
export interface ChannelEvents {
  /**
   * Calls `listener` with every final outcome; returns the function that unsubscribes. Where the
   * statuses share the commit of the write ending a local outcome, the outcome comes with
   * `committed` (`OutcomeSink.record`), in the tick of that write, so that the final status joins
   * its commit. For a local outcome of this channel the listener returns whether its final status
   * was written (`OutcomeListener`). `channel`: the listener needs only the events of this channel
   * (it still filters, but the app may skip calling it for others: with a thousand channels, a
   * message would otherwise call a thousand listeners).
   */
  subscribeOutcomes(
    listener: (outcome: Outcome, origin?: EventOrigin, committed?: Promise<boolean>) => unknown,
    channel?: string,
  ): () => void;
  /** Calls `listener` whenever a turn starts (again, for a retry); returns the unsubscribe. */
  subscribeTurnStarts(
    listener: (turn: TurnStart, origin?: EventOrigin) => void,
    channel?: string,
  ): () => void;
  /**
   * Calls `listener` when a turn's replies were stored in the outbox and the turn completed: its
   * messages are answered, their replies on their way. Returns the unsubscribe.
   */
  subscribeRepliesStored?(listener: (delivery: Delivery) => void, channel?: string): () => void;
  /**
   * With a shared pool: this replica's id, which the channel stamps on the messages it accepts
   * (`InboundMessage.accepted_by`), so that the other replicas relay their turn starts and
   * outcomes here, and only here.
   */
  replicaId?: string;
  /**
   * With a shared pool: hands a local outcome of this channel to the replica that accepted its
   * message (none when that is this one). The tracker calls it once the final status write has
   * landed (or failed), so that a replica answered by it and asked again reads the status from
   * the store.
   */
  shareOutcome?(outcome: Outcome): void;
  /**
   * With a shared pool: where a message another replica accepted stands (`QueryPool.locate`), so
   * that it reads queued or running here too, and never 404 before its final status is stored.
   */
  locate?(messageId: string): Promise<PooledMessageState | null>;
  /** With a shared pool: hands replies sent here to the event streams other replicas hold. */
  shareReplies?: ReplicaEvents['publishReplies'];
  /**
   * With a shared pool: calls `listener` with the replies other replicas send to one session of
   * this channel until the returned function is called.
   */
  followSession?: ReplicaEvents['followSession'];
}
