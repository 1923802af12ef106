import { type Query, aggregate } from './aggregator.js';
import { retryDelayMs } from './backoff.js';
import type { ControllerObserver, TurnResult } from './controller-observer.js';
import { deliveryOf } from '../outbound/delivery.js';
import { SwitchboardError, isSwitchboardError } from '../model/errors.js';
import type { Reply } from '../model/message.js';
import type { Outcome, OutcomeReason, OutcomeSink } from '../model/outcome.js';
import type { PipelinePolicy } from './pipeline-policy.js';
import type { PipelineResult } from '../ports/pipeline.js';
import type { QueryPool, SettleOptions, SettledReplies, Turn } from '../ports/query-pool.js';
import type { Settlement } from '../ports/settlement.js';
import type { QueuedMessage } from '../model/queued-message.js';
import type { AddResult, Delivery } from '../ports/reply-outbox.js';
import type { RunningTurn } from './running-turn.js';

/** How long a settlement waits before writing again to a store that did not answer. */
const STORE_RETRY_MS = 1000;

/** What the settling policy works with; the controller passes its own options on. */
export interface TurnSettlementOptions {
  pool: QueryPool;
  outcomes: OutcomeSink;
  /**
   * Stores a delivery of one running turn's replies in the outbox (durable once resolved); the
   * reply sender sends it after the turn ended, or sent it already and stored it ended, its
   * messages out of the journal with that write (`ended`).
   */
  storeReplies: (entry: RunningTurn, query: Query, delivery: Delivery) => Promise<AddResult>;
  /**
   * With a pool that stores replies in its settlement (`QueryPool.storesReplies`): stores a
   * delivery of one running turn's answer through `complete`, the pool write that completes the
   * turn with it, and answers that write's settlement. Absent: `storeReplies`, then the pool write.
   */
  storeRepliesThrough?: (
    entry: RunningTurn,
    query: Query,
    delivery: Delivery,
    complete: (claimAt: number | undefined, stored: SettledReplies['stored']) => Promise<Settlement>,
  ) => Promise<Settlement>;
  /**
   * What a settlement of `entry` that frees its slot asks of the pool besides: the controller
   * asks it to claim its next turn in the same step while it is not stopping.
   */
  settleOptions: (entry: RunningTurn) => SettleOptions | undefined;
  observer?: ControllerObserver;
  /** Jitter source, [0, 1). */
  random: () => number;
  now: () => number;
}

/**
 * How a turn ends (docs/design.md §2 "Controller"): each method makes the pool write and records the
 * outcomes of one ending. It owns the turn's messages once called; `entry.decided` guards against
 * a second ending (a late answer after the sweep released the turn).
 */
export interface TurnSettlement {
  /**
   * The pipeline answered: its replies are stored in the outbox (with `draft`, the preview of a
   * streamed answer, for the final send to edit), then the turn completes — in one write when the
   * pool stores replies in its settlement; the messages' outcome
   * is recorded when the delivery ends (reply-sender.ts). Without replies the messages complete at once.
   * The turn completes only once the run's own write (`PipelineResult.saved`, which must not
   * reject) landed too.
   */
  answered(entry: RunningTurn, query: Query, result: PipelineResult, draft?: string): Promise<void>;
  /** The pipeline failed: abandoned when the drain aborted it, else retried or dead-lettered. */
  failed(entry: RunningTurn, policy: PipelinePolicy, error: unknown): Promise<void>;
  /** The turn's pipeline is no longer configured: its messages are dropped. */
  pipelineMissing(entry: RunningTurn): Promise<void>;
  /**
   * The turn's session is in handoff (`HandoffDesk.holdTurn`): its messages were written to the
   * transcript and end `handed_off/held` — or, when the transcript was `full`, `dropped/queue_overflow`.
   */
  handedOff(entry: RunningTurn, hold: 'held' | 'full'): Promise<void>;
  /** The drain aborted the turn or let it go: kept for the next start, or dropped. */
  abandoned(entry: RunningTurn): Promise<void>;
  /**
   * The claim handed out messages past their pipeline's `retry.max_attempts`: each attempt so far
   * ended without a settlement (the process died running them). Those are dead-lettered without
   * running; the others go back at once.
   */
  exhaustedAtClaim(entry: RunningTurn, policy: PipelinePolicy): Promise<void>;
  /** Records waiting messages a non-durable pool gave up at shutdown. */
  droppedAtShutdown(messages: readonly QueuedMessage[]): void;
}

function describeError(error: unknown): { code: string; message: string } {
  if (isSwitchboardError(error)) return { code: error.code, message: error.message };
  if (error instanceof Error) return { code: 'SB_PIPELINE_FAILED', message: error.message };
  return { code: 'SB_PIPELINE_FAILED', message: String(error) };
}

/** The settling policy of the controller: retry with backoff, dead letter, outcome recording. */
export function createTurnSettlement(options: TurnSettlementOptions): TurnSettlement {
  const { pool, outcomes, storeReplies, storeRepliesThrough, settleOptions, observer, random, now } = options;

  /**
   * The outcomes of `messages` ending as `kind`, built before the pool write that ends them: a
   * shared pool keeps them in that very write until they are recorded (`QueryPool.complete`).
   */
  function outcomesOf(
    messages: readonly QueuedMessage[],
    kind: 'completed' | 'dropped' | 'dead_lettered' | 'handed_off',
    extra: {
      reason?: OutcomeReason;
      turn?: Turn;
      replies?: Reply[];
      error?: unknown;
      undelivered?: Delivery;
    },
  ): Outcome[] {
    const at = now();
    const error = extra.error === undefined ? undefined : describeError(extra.error);
    return messages.map((queued) => ({
      kind,
      reason: extra.reason,
      at,
      message: queued.message,
      session: queued.session,
      pipeline: queued.pipeline,
      rule: queued.rule,
      turnId: extra.turn?.id,
      ...(queued.replayOf === undefined ? {} : { replayOf: queued.replayOf }),
      attempt: queued.attempt,
      replies: extra.replies,
      error,
      ...(extra.undelivered === undefined
        ? {}
        : { undelivered: { origin: extra.undelivered.origin, replies: extra.undelivered.replies } }),
    }));
  }

  /**
   * Records the outcomes of a settlement the pool applied. Between that write and this call is
   * the one point where a process dies after a message ended and before its records were
   * written: a shared pool kept them in the settlement's write, and another replica records them
   * after a while (docs/design.md §5 "Outcomes kept with their settlement"); a pool of one
   * process has its journal removal in the same commit as these records.
   */
  function recordAll(ended: readonly Outcome[]): void {
    for (const outcome of ended) outcomes.record(outcome);
  }

  function ended(entry: RunningTurn, result: TurnResult): void {
    observer?.turnEnded?.(entry.turn, result, now() - entry.startedAt);
  }

  /**
   * Makes a settlement's store write (the pool's, the outbox's), again every `STORE_RETRY_MS`
   * while the store is unreachable (a shared pool's Redis restarting): the turn has run, and
   * giving up would run it again. It stops as `lost` once the pool gives the lease up, which a
   * shared pool does when it cannot renew it (docs/design.md §5 "Redis down").
   */
  async function settle<T>(entry: RunningTurn, write: () => Promise<T>): Promise<T | 'lost'> {
    for (let failures = 0; ; failures++) {
      if (entry.leaseLost) return 'lost';
      try {
        return await write();
      } catch (err) {
        if (!isSwitchboardError(err, 'SB_STORE_UNAVAILABLE')) throw err;
        if (failures === 0)
          entry.logger.error({ err }, 'settlement failed: the store is unreachable, retrying');
      }
      await new Promise((resolve) => setTimeout(resolve, STORE_RETRY_MS));
    }
  }

  /**
   * Whether the pool applied a settlement. On `lost` the claim had been taken over (its lease
   * expired): whoever holds the messages now records their outcome, so this replica records none.
   */
  function held(entry: RunningTurn, settlement: Settlement): boolean {
    if (settlement === 'settled') return true;
    entry.logger.warn(
      { attempt: entry.turn.attempt },
      'lease lost: the turn was taken over by another replica; recording no outcome',
    );
    ended(entry, 'lost');
    return false;
  }

  /**
   * Dead-letters `final` (with the pipeline's dead-letter reply) and puts the `retried` messages
   * back after `delayMs`.
   */
  async function retryOrDeadLetter(
    entry: RunningTurn,
    policy: PipelinePolicy,
    final: readonly QueuedMessage[],
    retried: readonly QueuedMessage[],
    delayMs: number,
    failure: { reason: OutcomeReason; error: unknown },
  ): Promise<void> {
    const { turn } = entry;
    // Stored while the turn still holds its session, so that it leaves before any reply of the
    // session's next turn (same chat, added earlier). A crash after it and before the pool write
    // below re-runs the messages (at least once): its id is derived from the turn's, so the apology
    // is stored once while it waits, and may be sent twice at worst, never a lost message.
    let apology: Delivery | undefined;
    if (final.length > 0 && policy.deadLetterReply !== undefined) {
      const finalQuery = aggregate(retried.length === 0 ? turn : { ...turn, messages: [...final] });
      const reply = deliveryOf(turn, final, [{ text: policy.deadLetterReply }], {
        kind: 'dead_letter_reply',
        nowMs: now(),
      });
      apology = await storeReplies(entry, finalQuery, reply).then(
        () => reply,
        (err: unknown) => {
          entry.logger.warn({ err }, 'dead letter reply could not be stored');
          return undefined;
        },
      );
    }
    const finalIds = final.map((queued) => queued.message.id);
    const dead = outcomesOf(final, 'dead_lettered', { reason: failure.reason, turn, error: failure.error });
    // The outcome of the message the apology answers carries it, so that every writer of its final
    // status writes it — the replica recovering a kept outcome too — whenever its send lands.
    const answered = dead[0];
    if (apology !== undefined && answered !== undefined) answered.replies = apology.replies;
    const settlement =
      retried.length === 0
        ? await settle(entry, () => pool.complete(turn, dead, settleOptions(entry)))
        : await settle(entry, () => pool.retry(turn, delayMs, finalIds, dead, settleOptions(entry)));
    if (!held(entry, settlement)) return;
    if (retried.length > 0) observer?.turnRetried?.(turn, delayMs);
    recordAll(dead);
    ended(entry, retried.length === 0 ? 'dead_lettered' : 'retried');
  }

  async function abandoned(entry: RunningTurn): Promise<void> {
    if (entry.decided) return;
    entry.decided = true;
    if (pool.durable) {
      if (!held(entry, await settle(entry, () => pool.abandon(entry.turn)))) return;
    } else {
      const dropped = outcomesOf(entry.turn.messages, 'dropped', { reason: 'shutdown', turn: entry.turn });
      if (!held(entry, await settle(entry, () => pool.complete(entry.turn, dropped)))) return;
      recordAll(dropped);
    }
    observer?.turnEnded?.(entry.turn, 'abandoned', 0);
  }

  return {
    async answered(entry, query, { replies, saved }, draft) {
      entry.decided = true;
      const { turn } = entry;
      /** Frees the session for its next turn, which may read what the run wrote. */
      const complete = async (ending: readonly Outcome[] = [], leftJournal = false) => {
        await saved;
        const options = leftJournal ? { ...settleOptions(entry), leftJournal } : settleOptions(entry);
        return settle(entry, () => pool.complete(turn, ending, options));
      };
      if (replies.length === 0) {
        const completed = outcomesOf(turn.messages, 'completed', { turn, replies });
        if (!held(entry, await complete(completed))) return;
        recordAll(completed);
        ended(entry, 'completed');
        return;
      }
      const answer = deliveryOf(turn, turn.messages, replies, { kind: 'answer', nowMs: now() });
      const delivery = draft === undefined ? answer : { ...answer, draft };
      // Stored by the write that completes the turn, both or neither, unless the run's own write
      // is still under way: the answer then leaves at once, and the turn completes once it landed.
      const throughSettlement =
        pool.storesReplies === true && storeRepliesThrough !== undefined && saved === undefined;
      let leftJournal = false;
      try {
        if (throughSettlement) {
          const settlement = await settle(entry, () =>
            storeRepliesThrough(entry, query, delivery, (claimAt, stored) =>
              pool.complete(turn, [], { ...settleOptions(entry), replies: { delivery, claimAt, stored } }),
            ),
          );
          if (!held(entry, settlement)) return;
        } else {
          // Stored before the turn completes: a crash in between runs the turn again (at least
          // once), never loses its answer (docs/design.md §2 "Durability").
          const stored = await settle(entry, () => storeReplies(entry, query, delivery));
          if (!held(entry, stored === 'lost' ? stored : 'settled')) return;
          leftJournal = stored === 'ended';
        }
      } catch (err) {
        entry.logger.error({ err }, 'dead letter: replies could not be stored');
        const dead = outcomesOf(turn.messages, 'dead_lettered', {
          reason: 'delivery_failed',
          turn,
          error: err,
          undelivered: delivery,
        });
        if (!held(entry, await complete(dead))) return;
        recordAll(dead);
        ended(entry, 'dead_lettered');
        return;
      }
      if (!throughSettlement && !held(entry, await complete([], leftJournal))) return;
      observer?.repliesStored?.(delivery);
      ended(entry, 'completed');
    },

    async failed(entry, policy, error) {
      if (isSwitchboardError(entry.abortReason, 'SB_SHUTDOWN')) return abandoned(entry);
      entry.decided = true;
      const { turn } = entry;
      const retryable = isSwitchboardError(error) && error.retryable;
      // Attempts and their limit are per message: one merged into a retried burst is not
      // dead-lettered on its first try because the burst's head used up its attempts.
      const { maxAttempts } = policy.retry;
      const final = retryable
        ? turn.messages.filter((queued) => queued.attempt >= maxAttempts)
        : turn.messages;
      const retried = retryable ? turn.messages.filter((queued) => queued.attempt < maxAttempts) : [];
      const reason = retryable ? 'max_attempts' : 'fatal_error';

      if (final.length > 0) {
        entry.logger.error(
          { err: error, attempt: turn.attempt, reason, messages: final.length },
          'dead letter: turn failed for good',
        );
      }

      let delayMs = 0;
      if (retried.length > 0) {
        let attempt = 0;
        for (const queued of retried) attempt = Math.max(attempt, queued.attempt);
        const retryAfterMs = isSwitchboardError(error) ? error.retryAfterMs : undefined;
        delayMs = retryDelayMs(attempt, policy.retry, random, retryAfterMs);
        entry.logger.warn({ err: error, attempt, delayMs }, 'turn failed, retrying');
      }
      await retryOrDeadLetter(entry, policy, final, retried, delayMs, { reason, error });
    },

    async exhaustedAtClaim(entry, policy) {
      entry.decided = true;
      const { maxAttempts } = policy.retry;
      const final = entry.turn.messages.filter((queued) => queued.attempt > maxAttempts);
      const retried = entry.turn.messages.filter((queued) => queued.attempt <= maxAttempts);
      const error = new SwitchboardError('SB_PIPELINE_FAILED', {
        message: `started ${maxAttempts} times without an answer (the process stopped while it ran)`,
      });
      entry.logger.error(
        { attempt: entry.turn.attempt, maxAttempts, messages: final.length },
        'dead letter: attempts used up before this claim; not running it again',
      );
      await retryOrDeadLetter(entry, policy, final, retried, 0, { reason: 'max_attempts', error });
    },

    async pipelineMissing(entry) {
      entry.decided = true;
      const { turn } = entry;
      entry.logger.error(
        { messages: turn.messages.length },
        'dead letter: the pipeline is no longer configured; a replay routes the messages again',
      );
      const error = new SwitchboardError('SB_PIPELINE_MISSING', {
        message: `pipeline "${turn.pipeline}" is not configured`,
      });
      const deadLettered = outcomesOf(turn.messages, 'dead_lettered', {
        reason: 'pipeline_removed',
        turn,
        error,
      });
      if (!held(entry, await settle(entry, () => pool.complete(turn, deadLettered, settleOptions(entry)))))
        return;
      recordAll(deadLettered);
      ended(entry, 'dead_lettered');
    },

    async handedOff(entry, hold) {
      entry.decided = true;
      const { turn } = entry;
      const ends =
        hold === 'held'
          ? outcomesOf(turn.messages, 'handed_off', { reason: 'held', turn })
          : outcomesOf(turn.messages, 'dropped', { reason: 'queue_overflow', turn });
      if (hold === 'full')
        entry.logger.warn({ messages: turn.messages.length }, 'handoff transcript is full: dropping');
      if (!held(entry, await settle(entry, () => pool.complete(turn, ends, settleOptions(entry))))) return;
      recordAll(ends);
      ended(entry, hold === 'held' ? 'handed_off' : 'dropped');
    },

    abandoned,

    droppedAtShutdown(messages) {
      recordAll(outcomesOf(messages, 'dropped', { reason: 'shutdown' }));
    },
  };
}
