import {
  type Logger,
  type MessageStatus,
  type Outcome,
  type PooledMessageState,
  isFinalStatus,
  statusVersion,
} from '@switchboard/core';
import { emptyStatus, finalStatus } from './status-from-outcome.js';
import type { TrackedMessage } from './tracked-message.js';

/** Followed messages one sweep checks at most (two reads each). */
const SWEEP_PER_ROUND = 100;

const DEFAULTS = {
  sweepEveryMs: 30_000,
  staleAfterMs: 60_000,
  checkElsewhereEveryMs: 1_000,
} satisfies Partial<ReplicaReconciliationOptions>;

export interface ReplicaReconciliationOptions {
  channelId: string;
  /** The messages the tracker follows, by id. */
  followed: Map<string, TrackedMessage>;
  /** With a shared pool: where a message stands in it (`ChannelEvents.locate`). */
  locate: ((messageId: string) => Promise<PooledMessageState | null>) | undefined;
  /** The status the store holds of a message of this channel, or null. */
  stored(id: string): Promise<MessageStatus | null>;
  /** Writes a followed message's status after its earlier writes. */
  write(id: string, message: TrackedMessage, status: MessageStatus): Promise<void>;
  /** Answers the requests waiting on a followed message that is now final. */
  answer(id: string, message: TrackedMessage, status: MessageStatus, reason?: string): void;
  now: () => number;
  logger: Logger;
  /** With `locate`: how often followed messages are checked for a lost outcome. Default 30 s. */
  sweepEveryMs?: number;
  /** With `locate`: a followed message not final this long (ms) is checked. Default 60 s. */
  staleAfterMs?: number;
  /**
   * With `locate`: how often the store is read for a message another replica accepted while a
   * request waits on it here (`waitedElsewhere`). Default 1 s.
   */
  checkElsewhereEveryMs?: number;
}

/** How a channel's statuses agree with what the other replicas sharing its pool did. */
export interface ReplicaReconciliation {
  /** Another replica recorded `outcome` of `id`: answers the requests waiting on it here. */
  relayedOutcome(id: string, outcome: Outcome): void;
  /**
   * The status of a followed message still queued or running here, with a shared pool: another
   * replica may have ended it while its relayed outcome was lost (pub/sub is at most once), so the
   * store decides.
   */
  checked(id: string, message: TrackedMessage, status: MessageStatus): Promise<MessageStatus>;
  /**
   * A message not followed here and not in the store: where the shared pool says it stands, if
   * it is of this channel; null without a shared pool.
   */
  elsewhere(id: string): Promise<MessageStatus | null>;
  /**
   * A request waits here on `message`, which another replica accepted (a repeated keyed request):
   * that replica alone hears its events, so the store is read every `checkElsewhereEveryMs` until
   * it is final there (then the waiters are answered) or nobody waits any more.
   */
  waitedElsewhere(id: string, message: TrackedMessage): void;
  /** Stops the sweep. */
  close(): void;
}

/**
 * Starts reconciling at once: with `locate`, every `sweepEveryMs`, the followed messages not final
 * after `staleAfterMs` are checked (docs/design.md §5 "Several replicas").
 */
export function createReplicaReconciliation(options: ReplicaReconciliationOptions): ReplicaReconciliation {
  const { channelId, followed, locate, stored, now } = options;
  const log = options.logger;

  /** A followed message turned out final elsewhere: answers its waiters and lets it go. */
  function settle(id: string, message: TrackedMessage, status: MessageStatus, reason?: string): void {
    if (message.status !== null && isFinalStatus(message.status)) return;
    message.status = status;
    options.answer(id, message, status, reason);
  }

  /**
   * Another replica's outcome answers this replica's waiting requests, only for messages followed
   * here, and is not written: the replica that recorded it writes the final status, with the
   * replies its `send` appended, which this one never saw (docs/design.md §5 "Several replicas").
   * That status was stored before the outcome was relayed, so the answer is read from the store;
   * the outcome's own account only stands in when the store fails to answer.
   *
   * With a shared reply outbox, the replica that ran the turn writes `delivery: pending` when its
   * replies are stored, while another replica's sender may already be delivering them. The store
   * keeps a final status over a later pending one, but that replica's final write may have
   * failed. So the store is read once this replica's writes have landed, and the final status is
   * written again from the outcome when the store holds this replica's pending one.
   */
  function relayedOutcome(id: string, outcome: Outcome): void {
    const message = followed.get(id);
    if (message === undefined || (message.status !== null && isFinalStatus(message.status))) return;
    message.endedElsewhere = true;
    const told = finalStatus(outcome, message.status, now());
    const wrotePending = message.status?.delivery === 'pending';
    const landed = message.writing ?? Promise.resolve();
    landed
      .then(() => stored(id))
      .then(
        (status) => {
          if (status !== null && isFinalStatus(status) && status.generation >= told.generation) {
            settle(id, message, status, outcome.reason);
            return;
          }
          if (wrotePending)
            options
              .write(id, message, told)
              .catch((err: unknown) =>
                log.error({ err, messageId: id, outcome: outcome.kind }, 'status update failed'),
              );
          settle(id, message, told, outcome.reason);
        },
        () => settle(id, message, told, outcome.reason),
      );
  }

  async function checked(id: string, message: TrackedMessage, status: MessageStatus): Promise<MessageStatus> {
    const inStore = await stored(id);
    const known = message.status ?? status;
    if (inStore === null) return known;
    // Another replica that ran the turn may have stored it further along (`completed`, its delivery
    // pending): answered as stored, so that no reader sees the message go back. Not kept here:
    // this replica's own writes and `relayedOutcome` go by what it wrote itself.
    if (!isFinalStatus(inStore)) return statusVersion(inStore) > statusVersion(known) ? inStore : known;
    // A replay of a dead letter runs here: the store keeps the first run's final status until the
    // replay's replaces it.
    if (inStore.generation < known.generation) return known;
    settle(id, message, inStore);
    return inStore;
  }

  /**
   * Followed messages not final after `staleAfterMs` whose outcome this replica may never hear of
   * (a lost relayed event, a turn whose lease it lost). Those final in the store are settled;
   * those the pool no longer holds, with no status stored, are let go — nothing here would ever
   * end them.
   */
  async function sweepStale(): Promise<void> {
    const before = now() - (options.staleAfterMs ?? DEFAULTS.staleAfterMs);
    const stale = [...followed]
      .filter(
        ([, message]) =>
          message.status !== null && !isFinalStatus(message.status) && message.status.updated_at < before,
      )
      .slice(0, SWEEP_PER_ROUND);
    for (const [id, message] of stale) {
      const status = message.status as MessageStatus;
      if (isFinalStatus(await checked(id, message, status))) continue;
      if ((await locate?.(id)) === null && message.waiters.length === 0 && followed.get(id) === message)
        followed.delete(id);
    }
  }
  const sweeper =
    locate === undefined
      ? undefined
      : setInterval(() => {
          sweepStale().catch((err: unknown) => log.warn({ err }, 'status sweep failed: retrying'));
        }, options.sweepEveryMs ?? DEFAULTS.sweepEveryMs);
  sweeper?.unref();

  const waited = new Map<string, TrackedMessage>();
  let checker: ReturnType<typeof setInterval> | undefined;
  let checking = false;

  async function checkWaited(): Promise<void> {
    for (const [id, message] of waited) {
      const final = message.status !== null && isFinalStatus(message.status);
      if (final || message.waiters.length === 0 || followed.get(id) !== message) {
        waited.delete(id);
        continue;
      }
      const status = await stored(id);
      if (status === null || !isFinalStatus(status)) continue;
      waited.delete(id);
      settle(id, message, status);
    }
  }

  function waitedElsewhere(id: string, message: TrackedMessage): void {
    if (locate === undefined) return;
    waited.set(id, message);
    checker ??= setInterval(() => {
      if (checking) return;
      checking = true;
      checkWaited()
        .catch((err: unknown) => log.warn({ err }, 'status check failed: retrying'))
        .finally(() => {
          checking = false;
          if (waited.size > 0) return;
          clearInterval(checker);
          checker = undefined;
        });
    }, options.checkElsewhereEveryMs ?? DEFAULTS.checkElsewhereEveryMs);
    checker.unref();
  }

  async function elsewhere(id: string): Promise<MessageStatus | null> {
    const pooled = (await locate?.(id)) ?? null;
    if (pooled === null || pooled.channel !== channelId) return null;
    if (pooled.state === 'settled') {
      // Final, its status written by the replica that ran it: it reads as running until it lands.
      const status = await stored(id);
      if (status !== null) return status;
    }
    return {
      ...emptyStatus(id, channelId, pooled.tenant, now()),
      status: pooled.state === 'queued' ? 'queued' : 'running',
      pipeline: pooled.pipeline,
      rule: pooled.rule,
    };
  }

  return {
    relayedOutcome,
    checked,
    elsewhere,
    waitedElsewhere,
    close() {
      clearInterval(sweeper);
      clearInterval(checker);
      waited.clear();
    },
  };
}
