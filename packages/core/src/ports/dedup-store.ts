/**
 * Remembers platform delivery ids (Telegram `update_id`, Slack `event_id`, Discord message id)
 * so that a redelivered event becomes outcome `duplicate` instead of a second turn.
 *
 * Atomicity: `firstSeen` is check-and-set in one step, so two concurrent deliveries of the same
 * id cannot both be first, also across replicas when the store is shared.
 */
export interface DedupStore {
  /**
   * Marks `key` as seen for `ttlMs`. Returns true when this call saw it first, false when it
   * was already seen within its TTL.
   */
  firstSeen(key: string, ttlMs: number): Promise<boolean>;
  /** Forgets `key`, so a later delivery counts as first again (used when a message was refused). */
  forget(key: string): Promise<void>;
}
