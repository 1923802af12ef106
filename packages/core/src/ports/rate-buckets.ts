/**
 * Token buckets that pace a channel's platform calls (docs/design.md §3 "Pacing"): before a send
 * or an edit, the channel takes one token from each bucket the call counts against (the bot,
 * the chat, the group), so that it stays under the platform's limits instead of meeting its 429s.
 * Tenants' quotas (docs/design.md §10) are buckets too, in a store of their own.
 *
 * A bucket holds `burst` tokens and gets one back every `perMs / limit`: `limit` calls per
 * `perMs` in the long run, at most `burst` of them at once. Buckets are named by their callers (`bucketKey`); a bucket nobody used for
 * a while is full, and an implementation may forget it.
 *
 * `take` is atomic over its buckets: it takes a token from every one or from none. It takes
 * only what is there now, never a token of the future: a reservation ahead of time would hold
 * the bot's bucket for as long as the slowest chat or group must wait, and stall every other
 * chat meanwhile. So callers that wait try again, and no order among them is promised. Time comes
 * from the implementation's clock (`now`), never the store's, so replicas sharing buckets must
 * have clocks that agree well within the shortest interval (`perMs / limit`). The store owns its
 * connection. Deliberately left out: waiting (see `createSendPacer`). Pacing never gives a token
 * back (a call that then failed still counts, as it does for the platform); quotas do, for a
 * message that was then not accepted (`giveBack`).
 */

/** One bucket of a take. */
export interface RateBucket {
  /** Which bucket: `bucketKey(channel, scope, chat)`. */
  key: string;
  /** Calls allowed per `perMs`; at least 1. */
  limit: number;
  /** The period over which `limit` tokens come back, ms; at least 1. */
  perMs: number;
  /** Calls allowed at once (the bucket's size); at least 1. */
  burst: number;
}

/**
 * The most buckets one take may name: pacing names the bot's, the chat's and the group's; a
 * tenant's quotas (`MAX_QUOTAS_PER_TENANT`) name up to this many.
 */
export const MAX_BUCKETS_PER_TAKE = 8;

/** What one token bucket counts: every call of a bot, of one chat, or of one group chat. */
export type BucketScope = 'bot' | 'chat' | 'group';

/** The name of a bucket: the channel id, the scope and (but for `bot`) the chat id. */
export function bucketKey(channel: string, scope: BucketScope, chat?: string): string {
  return scope === 'bot' ? `${channel}:bot` : `${channel}:${scope}:${chat ?? ''}`;
}

/** What `RateBuckets.attempt` found. */
export interface BucketAttempt {
  /** 0 when the tokens were taken; else the ms until every bucket has one (at least 1). */
  waitMs: number;
  /** The indexes (into the buckets named) of those without a token now; empty when taken. */
  short: number[];
}

export interface RateBuckets {
  /**
   * Takes one token from each of `buckets` (1 to `MAX_BUCKETS_PER_TAKE`, distinct keys) if every
   * one has a token now, and returns 0; otherwise takes none and returns the ms until every one
   * would have a token (at least 1), when the caller may try again.
   */
  take(buckets: readonly RateBucket[]): Promise<number>;
  /**
   * `take`, also saying which buckets refused it: a quota's refusal is answered per the quota
   * that refused (its `quota_reply` at most once per its window).
   */
  attempt(buckets: readonly RateBucket[]): Promise<BucketAttempt>;
  /**
   * Gives back the token a take of `buckets` took, for a quota whose message was then not
   * accepted (the pool refused it, or the store failed): a message that never entered must not
   * use its sender's quota up. A bucket full again is left as it is. Pacing never gives back.
   */
  giveBack(buckets: readonly RateBucket[]): Promise<void>;
}
