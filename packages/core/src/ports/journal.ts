import type { DeliveryKey } from './query-pool.js';
import type { QueuedMessage } from '../model/queued-message.js';

/** What `append` did: journaled the entry, or found its delivery key already seen. */
export type AppendResult = 'appended' | 'duplicate';

/**
 * Durable record of accepted messages, so nothing accepted is lost by a crash (docs/design.md §2
 * "Durability"). The in-memory pool writes through it: `append` completes before the platform
 * is acknowledged; `markStarted`, `markRetry` and `remove` are written behind, in order (see
 * Ordering). On start the pool reloads `load()` in acceptance order.
 *
 * Ordering: `load` returns entries in the order they were appended, and calls take effect in the
 * order they were made, also when the caller does not wait for one before the next: the pool
 * waits for `append` only, so a `remove` is durable once any write made after it is.
 * Atomicity: each call is atomic on its own; the store owns its connection. Left out: the pool's in-memory ordering
 * structures; they are rebuilt from `load` on start.
 */
export interface Journal {
  /**
   * Persists an accepted message before it is acknowledged. With `delivery`, marks its key seen
   * in the same atomic write, or — when the key is already seen within its TTL — writes nothing
   * and resolves `duplicate`. A rejected append wrote neither. Appending an id still journaled
   * (a replay of a dead letter whose removal failed) replaces it, at the end of acceptance order.
   */
  append(entry: QueuedMessage, delivery?: DeliveryKey): Promise<AppendResult>;
  /**
   * True when an append marked `deliveryKey` and its TTL has not run out (an append with it now
   * would resolve `duplicate`). Reads only.
   */
  seen(deliveryKey: string): Promise<boolean>;
  /** Records that a turn started running these messages (their new `attempt`). */
  markStarted(messageIds: readonly string[], attempt: number): Promise<void>;
  /**
   * Records that these messages wait on backoff until `retryAtMs` (ms since the epoch); `load`
   * returns it as their `retryAtMs`. Unknown ids are ignored.
   */
  markRetry(messageIds: readonly string[], retryAtMs: number): Promise<void>;
  /** Forgets messages whose outcome is final. Unknown ids are ignored. */
  remove(messageIds: readonly string[]): Promise<void>;
  /**
   * Every entry still journaled, in acceptance order, with its latest attempt and retry time, and
   * `answered` on those a store holding the reply outbox too marked with their stored replies.
   */
  load(): Promise<QueuedMessage[]>;
}
