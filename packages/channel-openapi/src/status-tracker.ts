import {
  type Logger,
  type MessageStatus,
  type MessageStatusStore,
  OUTCOME_KINDS,
  type Outcome,
  type Reply,
  type Turn,
} from '@switchboard/core';
import { createKeyedSerializer } from './keyed-serializer.js';

/** The engine events the channel follows; the app wires them to the outcome bus and controller. */
export interface ChannelEvents {
  /** Calls `listener` with every final outcome; returns the function that unsubscribes. */
  subscribeOutcomes(listener: (outcome: Outcome) => void): () => void;
  /** Calls `listener` whenever a turn starts (again, for a retry); returns the unsubscribe. */
  subscribeTurnStarts(listener: (turn: Turn) => void): () => void;
}

/** A final status, with the outcome's reason when the answer is given as it happens. */
export interface FinalStatus {
  status: MessageStatus;
  reason?: string;
}

/** Interest in one message's final status, registered before it is accepted. */
export interface StatusWatch {
  /** The final status, or null when `timeoutMs` passes first. Ends the watch either way. */
  wait(timeoutMs: number): Promise<FinalStatus | null>;
  /** Ends the watch without waiting. */
  cancel(): void;
}

/**
 * Keeps the stored status of this channel's messages current — queued on acceptance, running
 * when a turn starts, final on the outcome — and tells waiting requests when a message is final.
 */
export interface StatusTracker {
  /** Watches `id`; call before `ingress.accept`, so that a fast pipeline cannot finish unseen. */
  watch(id: string): StatusWatch;
  /** Records `queued`, unless a turn start or the outcome got there first. */
  queued(id: string, fields: { pipeline: string; rule: string | null }): Promise<void>;
  /** Appends replies sent for `id`; returns the updated status, or null when `id` is unknown. */
  appendReplies(id: string, replies: readonly Reply[]): Promise<MessageStatus | null>;
  /** The stored status once the updates already under way for `id` are written. */
  current(id: string): Promise<MessageStatus | null>;
  /** Stops following the engine events. */
  close(): void;
}

export interface StatusTrackerOptions {
  channelId: string;
  statuses: MessageStatusStore;
  events: ChannelEvents;
  logger: Logger;
  now?: () => number;
}

/** A status is final once the message has its outcome. */
const FINAL: ReadonlySet<MessageStatus['status']> = new Set(OUTCOME_KINDS);

/** True when nothing will change the status any more (but replies a dead letter reply adds). */
export function isFinal(status: MessageStatus): boolean {
  return FINAL.has(status.status);
}

function emptyStatus(id: string, updatedAt: number): MessageStatus {
  return {
    id,
    status: 'queued',
    pipeline: null,
    rule: null,
    turn: null,
    replies: [],
    error: null,
    updated_at: updatedAt,
  };
}

function finalStatus(outcome: Outcome, current: MessageStatus | null, at: number): MessageStatus {
  const base = current ?? emptyStatus(outcome.message.id, at);
  const failed = outcome.kind === 'dropped' || outcome.kind === 'dead_lettered';
  const error = outcome.error === undefined ? null : `${outcome.error.code}: ${outcome.error.message}`;
  return {
    id: outcome.message.id,
    status: outcome.kind,
    pipeline: outcome.pipeline ?? base.pipeline,
    rule: outcome.rule ?? base.rule,
    turn: outcome.turnId ?? base.turn,
    // The outcome carries the turn's replies, which `send` already appended for the first message.
    replies: outcome.replies ?? base.replies,
    // Without an error, the reason (queue_overflow, shutdown…) is the only account of a failure.
    error: error ?? (failed ? (outcome.reason ?? null) : null),
    updated_at: at,
  };
}

/**
 * Creates the tracker and subscribes it to `events` at once, so that no outcome of a message
 * accepted through this channel is missed, even while the channel is stopped and the engine
 * drains. Updates of one message are applied one after the other (read, change, write), so
 * that a late `queued` never overwrites `running` or a final status.
 */
export function createStatusTracker(options: StatusTrackerOptions): StatusTracker {
  const { channelId, statuses } = options;
  const now = options.now ?? Date.now;
  const log = options.logger;
  const serializer = createKeyedSerializer();
  const watchers = new Map<string, Set<(final: FinalStatus) => void>>();
  // Statuses of messages not yet final live here and reach the store twice: when queued (so a
  // restart still knows the id; a store that forgets on restart skips this one) and when final.
  // `running` and replies in between stay in memory: four reads and writes per message fewer on
  // the hot path (docs/BENCHMARKS.md).
  const live = new Map<string, MessageStatus>();

  /** Applies `change` after the pending updates of `id`; `change` returns null to leave it as is. */
  function update(
    id: string,
    change: (current: MessageStatus | null) => MessageStatus | null,
  ): Promise<MessageStatus | null> {
    return serializer.run(id, async () => {
      const current = live.get(id) ?? (await statuses.get(id));
      const updated = change(current);
      if (updated === null) return current;
      if (isFinal(updated)) {
        live.delete(id);
        await statuses.put(updated);
      } else {
        live.set(id, updated);
        if (current === null && statuses.durable) await statuses.put(updated);
      }
      return updated;
    });
  }

  function notify(id: string, final: FinalStatus): void {
    const waiting = watchers.get(id);
    watchers.delete(id);
    for (const resolve of waiting ?? []) resolve(final);
  }

  function onOutcome(outcome: Outcome): void {
    const id = outcome.message.id;
    if (outcome.message.channel !== channelId || outcome.kind === 'duplicate') return;
    let written: MessageStatus | undefined;
    update(id, (current) => {
      written = finalStatus(outcome, current, now());
      return written;
    })
      .catch((err) => log.error({ err, messageId: id, outcome: outcome.kind }, 'status update failed'))
      .finally(() => {
        // A waiting caller gets its answer even when the store refused the write.
        if (written !== undefined) notify(id, { status: written, reason: outcome.reason });
      });
  }

  function onTurnStart(turn: Turn): void {
    for (const queued of turn.messages) {
      const { message } = queued;
      if (message.channel !== channelId) continue;
      update(message.id, (current) => {
        if (current !== null && isFinal(current)) return null;
        return {
          ...(current ?? emptyStatus(message.id, now())),
          status: 'running',
          pipeline: turn.pipeline,
          rule: queued.rule ?? null,
          turn: turn.id,
          updated_at: now(),
        };
      }).catch((err) => log.error({ err, messageId: message.id }, 'status update failed'));
    }
  }

  const unsubscribe = [
    options.events.subscribeOutcomes(onOutcome),
    options.events.subscribeTurnStarts(onTurnStart),
  ];

  return {
    watch(id) {
      let resolveFinal: ((final: FinalStatus | null) => void) | undefined;
      const final = new Promise<FinalStatus | null>((resolve) => {
        resolveFinal = resolve;
      });
      const listener = (status: FinalStatus) => resolveFinal?.(status);
      const set = watchers.get(id) ?? new Set();
      set.add(listener);
      watchers.set(id, set);
      const cancel = () => {
        set.delete(listener);
        if (set.size === 0 && watchers.get(id) === set) watchers.delete(id);
        resolveFinal?.(null);
      };
      return {
        async wait(timeoutMs) {
          const timer = setTimeout(cancel, timeoutMs);
          try {
            return await final;
          } finally {
            clearTimeout(timer);
            cancel();
          }
        },
        cancel,
      };
    },

    async queued(id, fields) {
      await update(id, (current) =>
        current === null ? { ...emptyStatus(id, now()), pipeline: fields.pipeline, rule: fields.rule } : null,
      );
    },

    appendReplies(id, replies) {
      return update(id, (current) =>
        current === null
          ? null
          : { ...current, replies: [...current.replies, ...replies], updated_at: now() },
      );
    },

    async current(id) {
      await serializer.idle(id);
      return live.get(id) ?? statuses.get(id);
    },

    close() {
      for (const stop of unsubscribe) stop();
    },
  };
}
