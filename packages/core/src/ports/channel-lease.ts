/**
 * Who may hold a platform connection that allows one consumer per token (docs/design.md §5
 * "Single-owner connections"): Telegram long polling, a Discord gateway session, Slack Socket
 * Mode. Replicas sharing a store contend for one lease per channel id; the holder runs the
 * connection, the others stand by.
 *
 * A lease has a holder (a replica id), a deadline on the store's clock and an epoch. The epoch
 * grows by one at every acquisition (a first one, a takeover after the deadline, one after a
 * release, a holder's own after it gave the lease up) and never goes back: it is the fencing token — a
 * renewal or release naming an older epoch changes nothing.
 *
 * Each call is atomic. Deadlines are set and judged on the store's clock alone (Redis' `TIME` for
 * a shared store), never on the callers': a replica whose host clock is ahead, behind or steps
 * can neither take a live lease nor keep an expired one. A holder times its renewals and its
 * fencing by its own monotonic clock, from when it sent the call. The store owns its connection.
 * Deliberately left out: waiting for a lease (callers poll `acquire`) and telling the holder that
 * it lost one (it learns so from `renew`).
 */

/** One channel's lease as the store holds it. */
export interface ChannelLease {
  /** The channel id (`channels[].id`). */
  channel: string;
  /** The replica holding it. */
  holder: string;
  /** Fencing token: grows by one at every acquisition. */
  epoch: number;
  /**
   * Until when it holds without renewal, ms since the epoch on the store's clock: what a caller
   * compares with its own clock is an estimate, off by the clocks' difference.
   */
  expiresAt: number;
}

/** The leases of the single-owner channels of one deployment. */
export interface ChannelLeases {
  /**
   * Takes the lease of `channel` for `holder` for `ttlMs`, with the next epoch, unless another
   * holder's lease is still in force. A holder acquiring its own live lease gets the next epoch
   * too: a holder asks only once it gave its lease up, and a renewal that landed after that
   * must not hand it the old epoch back. Returns the lease in force after the call: `holder`'s
   * own when it got it, else the other holder's.
   */
  acquire(channel: string, holder: string, ttlMs: number): Promise<ChannelLease>;
  /**
   * Extends `lease` to `ttlMs` from now if its holder still holds it with the same epoch and it
   * has not expired. Returns the renewed lease, or null when it was lost (expired, taken over,
   * released).
   */
  renew(lease: ChannelLease, ttlMs: number): Promise<ChannelLease | null>;
  /** Gives `lease` up at once if it is still held with its epoch; returns whether it was. */
  release(lease: ChannelLease): Promise<boolean>;
  /** The leases in force now (not expired, not released), by channel id. */
  holders(): Promise<ChannelLease[]>;
}

/**
 * The timing a lease holder runs on, ms: a channel's connection, and the Redis pool's turn
 * claims alike (`DEFAULT_LEASE_TIMING` in `@switchboard/store-redis/lease-timing`).
 */
export interface LeaseTiming {
  /** How long a lease holds without renewal. */
  leaseMs: number;
  /** How often the holder renews. */
  renewEveryMs: number;
  /** Without a successful renewal for this long, the holder gives the lease up (fencing). */
  fenceAfterMs: number;
}
