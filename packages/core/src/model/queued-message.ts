import type { InboundMessage } from './message.js';
import type { SessionKey } from './session-key.js';

/** An accepted message waiting in, or running from, the pool. This is also what is journaled. */
export interface QueuedMessage {
  message: InboundMessage;
  session: SessionKey;
  pipeline: string;
  routedByRule: boolean;
  rule?: string;
  /**
   * Turns that have started with this message so far (0 until first claimed). Retry limits
   * apply per message: one merged into a retried burst has its own count.
   */
  attempt: number;
  /** When the pool accepted it, ms since the epoch; kept across retries and restarts. */
  acceptedAt: number;
  /**
   * Set when a failed turn put the message back: it may not run before this time (ms since the
   * epoch). Journaled (`Journal.markRetry`), so a restart keeps the backoff.
   */
  retryAtMs?: number;
  /**
   * Set on an operator's replay of a dead letter: the dead letter's audit id. The message keeps
   * its id (statuses and audit refer to it), but the replay is a new request for the backend, so
   * it is folded into the turn id (`requestIdOf`): a backend deduplicating on the turn id must not
   * take the replay for a re-run of the attempts that failed.
   */
  replayOf?: string;
  /**
   * Set by `Journal.load` on a message whose turn's replies were stored in the reply outbox by
   * the write that marked it (a store holding both, SQLite): that delivery sends them and records
   * the message's outcome when it ends, so a restart follows the message without running it again.
   */
  answered?: true;
}
