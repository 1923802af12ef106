import { type Query, aggregate } from './aggregator.js';
import { retryDelayMs } from './backoff.js';
import type { ControllerObserver, TurnResult } from './controller.js';
import { SwitchboardError, isSwitchboardError } from './errors.js';
import type { Reply } from './message.js';
import type { OutcomeReason, OutcomeSink } from './outcome.js';
import type { PipelinePolicy } from './pipeline-policy.js';
import type { QueryPool, QueuedMessage, Turn } from './ports/query-pool.js';
import type { RunningTurn } from './running-turn.js';

/** What the settling policy works with; the controller passes its own options on. */
export interface TurnSettlementOptions {
  pool: QueryPool;
  outcomes: OutcomeSink;
  /** Sends replies through the channel the query came from (the outbox). */
  deliver: (query: Query, replies: readonly Reply[]) => Promise<void>;
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
  /** The pipeline answered: its replies are delivered, then the messages complete. */
  answered(entry: RunningTurn, query: Query, replies: Reply[]): Promise<void>;
  /** The pipeline failed: abandoned when the drain aborted it, else retried or dead-lettered. */
  failed(entry: RunningTurn, query: Query, policy: PipelinePolicy, error: unknown): Promise<void>;
  /** The turn's pipeline is no longer configured: its messages are dropped. */
  pipelineMissing(entry: RunningTurn): Promise<void>;
  /** The drain aborted the turn or let it go: kept for the next start, or dropped. */
  abandoned(entry: RunningTurn): Promise<void>;
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
  const { pool, outcomes, deliver, observer, random, now } = options;

  function recordAll(
    messages: readonly QueuedMessage[],
    kind: 'completed' | 'dropped' | 'dead_lettered',
    extra: { reason?: OutcomeReason; turn?: Turn; replies?: Reply[]; error?: unknown },
  ): void {
    const at = now();
    const error = extra.error === undefined ? undefined : describeError(extra.error);
    for (const queued of messages) {
      outcomes.record({
        kind,
        reason: extra.reason,
        at,
        message: queued.message,
        session: queued.session,
        pipeline: queued.pipeline,
        rule: queued.rule,
        turnId: extra.turn?.id,
        attempt: queued.attempt,
        replies: extra.replies,
        error,
      });
    }
  }

  function ended(entry: RunningTurn, result: TurnResult): void {
    observer?.turnEnded?.(entry.turn, result, now() - entry.startedAt);
  }

  async function abandoned(entry: RunningTurn): Promise<void> {
    if (entry.decided) return;
    entry.decided = true;
    if (pool.durable) {
      await pool.abandon(entry.turn);
    } else {
      await pool.complete(entry.turn);
      recordAll(entry.turn.messages, 'dropped', { reason: 'shutdown', turn: entry.turn });
    }
    observer?.turnEnded?.(entry.turn, 'abandoned', 0);
  }

  return {
    async answered(entry, query, replies) {
      entry.decided = true;
      const { turn } = entry;
      try {
        await deliver(query, replies);
      } catch (err) {
        entry.logger.error({ err }, 'dead letter: replies could not be delivered');
        await pool.complete(turn);
        recordAll(turn.messages, 'dead_lettered', { reason: 'delivery_failed', turn, error: err });
        ended(entry, 'dead_lettered');
        return;
      }
      await pool.complete(turn);
      recordAll(turn.messages, 'completed', { turn, replies });
      ended(entry, 'completed');
    },

    async failed(entry, query, policy, error) {
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
        // Sent while the turn still holds its session, so that the session's next turn cannot
        // reply first. A crash after it and before the pool write below re-runs the messages
        // (at least once): the user may get the apology twice, never a lost message.
        if (policy.deadLetterReply !== undefined) {
          const finalQuery = retried.length === 0 ? query : aggregate({ ...turn, messages: final });
          await deliver(finalQuery, [{ text: policy.deadLetterReply }]).catch((err: unknown) =>
            entry.logger.warn({ err }, 'dead letter reply could not be delivered'),
          );
        }
      }

      if (retried.length === 0) {
        await pool.complete(turn);
      } else {
        let attempt = 0;
        for (const queued of retried) attempt = Math.max(attempt, queued.attempt);
        const retryAfterMs = isSwitchboardError(error) ? error.retryAfterMs : undefined;
        const delayMs = retryDelayMs(attempt, policy.retry, random, retryAfterMs);
        entry.logger.warn({ err: error, attempt, delayMs }, 'turn failed, retrying');
        const finalIds = final.map((queued) => queued.message.id);
        await pool.retry(turn, now() + delayMs, finalIds);
        observer?.turnRetried?.(turn, delayMs);
      }
      recordAll(final, 'dead_lettered', { reason, turn, error });
      ended(entry, retried.length === 0 ? 'dead_lettered' : 'retried');
    },

    async pipelineMissing(entry) {
      entry.decided = true;
      const { turn } = entry;
      entry.logger.error({ messages: turn.messages.length }, 'pipeline missing: dropping messages');
      await pool.complete(turn);
      const error = new SwitchboardError('SB_PIPELINE_MISSING', {
        message: `pipeline "${turn.pipeline}" is not configured`,
      });
      recordAll(turn.messages, 'dropped', { reason: 'pipeline_missing', turn, error });
      ended(entry, 'dropped');
    },

    abandoned,

    droppedAtShutdown(messages) {
      recordAll(messages, 'dropped', { reason: 'shutdown' });
    },
  };
}
