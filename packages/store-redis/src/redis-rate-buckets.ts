import {
  type BucketAttempt,
  MAX_BUCKETS_PER_TAKE,
  type RateBucket,
  type RateBuckets,
  SwitchboardError,
} from '@switchboard/core';
import type { RedisClient, RedisTarget } from './redis-connection.js';
import { openScriptClient } from './script-client.js';

export interface RedisRateBucketsOptions {
  /** Redis URL; the buckets open and own one connection with `FAIL_FAST_OPTIONS`. Either this or `client`. */
  url?: RedisTarget;
  /** A connection the caller owns (give it `FAIL_FAST_OPTIONS`); `close()` leaves it open. */
  client?: RedisClient;
  /** The deployment's prefix: keys are `{<prefix>}:rate:<bucket key>`. */
  prefix: string;
  /**
   * The buckets' clock (ms); the replicas' clocks must agree well within the shortest interval
   * (give them the pool's clock, Redis `TIME` carried forward). `'redis'`: Redis' own `TIME`,
   * read inside each take, so every replica takes on one clock whatever its own says (tenants'
   * quotas). Default `Date.now`.
   */
  now?: (() => number) | 'redis';
  /** `retryAfterMs` of `SB_STORE_UNAVAILABLE` while Redis does not answer. Default 1000. */
  retryAfterMs?: number;
}

const DEFAULTS = {
  now: Date.now,
  retryAfterMs: 1000,
} satisfies Partial<RedisRateBucketsOptions>;

/** `RateBuckets` in Redis, plus closing the connection it owns. */
export interface RedisRateBuckets extends RateBuckets {
  /** Closes an owned connection. */
  close(): Promise<void>;
}

/** The Redis key of a bucket; every bucket of a deployment is in one Redis Cluster slot. */
export function rateBucketKeyOf(prefix: string, bucket: string): string {
  return `{${prefix}}:rate:${bucket}`;
}

/**
 * The pacing buckets (docs/design.md §3 "Pacing") and tenants' quotas (§10) of a deployment in
 * Redis, shared by its replicas: each take is one Lua script (`rate-buckets/take.lua`) over the
 * buckets named (a give-back, `give-back.lua`, the same), with `now` from the caller's clock or Redis' own; a bucket's key expires once it
 * is full again. Connects (unless given a
 * client) and defines the scripts; rejects with `SB_STORE_UNAVAILABLE` when Redis does not
 * answer, as does every take while it stays away.
 */
export async function createRedisRateBuckets(options: RedisRateBucketsOptions): Promise<RedisRateBuckets> {
  const now = options.now ?? DEFAULTS.now;
  // The script reads `TIME` itself when given no time.
  const nowArg = now === 'redis' ? () => '' : now;
  const retryAfterMs = options.retryAfterMs ?? DEFAULTS.retryAfterMs;
  if (options.url === undefined && options.client === undefined) {
    throw new SwitchboardError('SB_CONFIG_INVALID', { message: 'rate buckets: give url or client' });
  }
  const opened = await openScriptClient({
    url: options.url,
    client: options.client,
    prefix: options.prefix,
    retryAfterMs,
  });
  const { client, ownsClient } = opened;

  async function attempt(buckets: readonly RateBucket[]): Promise<BucketAttempt> {
    if (buckets.length === 0 || buckets.length > MAX_BUCKETS_PER_TAKE) {
      throw new RangeError(`a take names 1 to ${MAX_BUCKETS_PER_TAKE} buckets, not ${buckets.length}`);
    }
    const keys = buckets.map((bucket) => rateBucketKeyOf(options.prefix, bucket.key));
    const rates = buckets.flatMap((bucket) => [bucket.limit, bucket.perMs, bucket.burst]);
    const [waitMs, ...short] = await opened.script<number[]>('rate-buckets/take', keys, [nowArg(), ...rates]);
    return { waitMs: waitMs ?? 0, short: short.map((index) => index - 1) };
  }

  return {
    async take(buckets) {
      return (await attempt(buckets)).waitMs;
    },
    attempt,
    async giveBack(buckets) {
      if (buckets.length === 0) return;
      const keys = buckets.map((bucket) => rateBucketKeyOf(options.prefix, bucket.key));
      const rates = buckets.flatMap((bucket) => [bucket.limit, bucket.perMs]);
      await opened.script<number>('rate-buckets/give-back', keys, [nowArg(), ...rates]);
    },
    async close() {
      if (ownsClient) client.disconnect();
    },
  };
}
