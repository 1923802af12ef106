import type { SessionReplies } from '../model/message.js';
import type { Outcome } from '../model/outcome.js';
import { type Logger, silentLogger } from '../ports/logger.js';
import type { TurnStart } from '../ports/query-pool.js';
import { type ReplicaEvents, turnStartOf } from '../ports/replica-events.js';

export interface MemoryReplicaEventsOptions {
  /** Where a listener that throws is logged. Default: `silentLogger`. */
  logger?: Logger;
}

/** `ReplicaEvents` of one replica among others of this process (`peer`). */
export interface MemoryReplicaEvents extends ReplicaEvents {
  /** Another replica on the same events, as a second gateway in this process would open it. */
  peer(): MemoryReplicaEvents;
}

/** One replica's listeners. */
interface Member {
  id: string;
  outcomes: Set<(outcome: Outcome) => void>;
  turnStarts: Set<(turn: TurnStart) => void>;
  /** By `sessionTopicOf`. */
  sessions: Map<string, Set<(replies: SessionReplies) => void>>;
}

const sessionTopicOf = (channel: string, session: string) => `${channel}\n${session}`;

/**
 * `ReplicaEvents` shared by replicas of one process (tests, several gateways embedded in one
 * program); a pool of one process has no other replica to tell. Each event is copied through JSON
 * as it is published and handed over in a later microtask, in publish order, as if it had crossed
 * to another process: a listener never runs inside the publisher's call, nor sees its later
 * changes.
 */
export function createMemoryReplicaEvents(options: MemoryReplicaEventsOptions = {}): MemoryReplicaEvents {
  const logger = options.logger ?? silentLogger;
  const members = new Set<Member>();

  /**
   * Hands `event` to each listener `pick` finds on the members `to` accepts but `from`, each its
   * own copy.
   */
  function publish<Event>(
    from: Member,
    to: (member: Member) => boolean,
    event: Event,
    pick: (member: Member) => ReadonlySet<(event: Event) => void> | undefined,
  ): void {
    let text: string;
    try {
      text = JSON.stringify(event);
    } catch (err) {
      logger.error({ err }, 'event relay failed');
      return;
    }
    queueMicrotask(() => {
      for (const member of members) {
        if (member === from || !to(member)) continue;
        for (const listener of pick(member) ?? []) {
          try {
            listener(JSON.parse(text) as Event);
          } catch (err) {
            logger.error({ err }, 'relayed event listener failed');
          }
        }
      }
    });
  }

  function replica(): MemoryReplicaEvents {
    const self: Member = {
      id: `replica-${members.size + 1}`,
      outcomes: new Set(),
      turnStarts: new Set(),
      sessions: new Map(),
    };
    members.add(self);
    const addressedTo = (to: string) => (member: Member) => member.id === to;
    const anyone = () => true;
    return {
      replicaId: self.id,
      publishOutcome(to, outcome) {
        if (to !== self.id) publish(self, addressedTo(to), outcome, (member) => member.outcomes);
      },
      publishTurnStart(to, turn) {
        if (to !== self.id) publish(self, addressedTo(to), turnStartOf(turn), (member) => member.turnStarts);
      },
      publishReplies(replies) {
        const topic = sessionTopicOf(replies.channel, replies.session);
        publish(self, anyone, replies, (member) => member.sessions.get(topic));
      },
      subscribeOutcomes(listener) {
        self.outcomes.add(listener);
        return () => self.outcomes.delete(listener);
      },
      subscribeTurnStarts(listener) {
        self.turnStarts.add(listener);
        return () => self.turnStarts.delete(listener);
      },
      followSession(channel, session, listener) {
        const topic = sessionTopicOf(channel, session);
        let listeners = self.sessions.get(topic);
        if (listeners === undefined) {
          listeners = new Set();
          self.sessions.set(topic, listeners);
        }
        listeners.add(listener);
        return () => {
          if (listeners.delete(listener) && listeners.size === 0) self.sessions.delete(topic);
        };
      },
      peer: replica,
    };
  }

  return replica();
}
