import { type ChannelLease, type ChannelLeases, SwitchboardError } from '@switchboard/core';
import type { RedisClient, RedisTarget } from './redis-connection.js';
import type { ScriptOf } from './lua-scripts.js';
import { openScriptClient } from './script-client.js';
import type { ReplicationOptions } from './replication-wait.js';

export interface RedisChannelLeasesOptions {
  /**
   * Replicas that must hold a write before the store answers for it (`WAIT`; docs/design.md §5
   * "Failover"). Default: none waited for.
   */
  replication?: ReplicationOptions | undefined;
  /** Redis URL; the leases open and own one connection with `FAIL_FAST_OPTIONS`. Either this or `client`. */
  url?: RedisTarget;
  /** A connection the caller owns (give it `FAIL_FAST_OPTIONS`); `close()` leaves it open. */
  client?: RedisClient;
  /** The deployment's prefix: keys are `{<prefix>}:channel-lease:…`. */
  prefix: string;
  /** `retryAfterMs` of `SB_STORE_UNAVAILABLE` while Redis does not answer. Default 1000. */
  retryAfterMs?: number;
}

const DEFAULTS = {
  retryAfterMs: 1000,
} satisfies Partial<RedisChannelLeasesOptions>;

/** `ChannelLeases` in Redis, plus closing the connection it owns. */
export interface RedisChannelLeases extends ChannelLeases {
  /** Closes an owned connection; a lease still held expires at its deadline. */
  close(): Promise<void>;
}

/** The three keys every channel-lease script takes, in its KEYS order; one Redis Cluster slot. */
export function channelLeaseKeysOf(prefix: string): string[] {
  const base = `{${prefix}}:channel-lease`;
  return [`${base}:holders`, `${base}:epochs`, `${base}:deadlines`];
}

/**
 * The channel leases of a deployment in Redis (docs/design.md §5 "Single-owner connections"):
 * every call is one Lua script over three keys, deciding deadlines on Redis' own clock (`TIME`),
 * so that a replica whose host clock is off, or steps, never takes a live lease. Connects
 * (unless given a client) and defines the scripts; rejects with `SB_STORE_UNAVAILABLE` when
 * Redis does not answer, as does every call while it stays away.
 */
export async function createRedisChannelLeases(
  options: RedisChannelLeasesOptions,
): Promise<RedisChannelLeases> {
  const retryAfterMs = options.retryAfterMs ?? DEFAULTS.retryAfterMs;
  const keys = channelLeaseKeysOf(options.prefix);
  if (options.url === undefined && options.client === undefined) {
    throw new SwitchboardError('SB_CONFIG_INVALID', { message: 'channel leases: give url or client' });
  }
  const opened = await openScriptClient({
    url: options.url,
    client: options.client,
    prefix: options.prefix,
    retryAfterMs,
    replication: options.replication,
  });
  const { client, ownsClient } = opened;
  const script = <Reply>(name: ScriptOf<'channel-leases'>, ...args: Array<string | number>) =>
    opened.script<Reply>(name, keys, args);

  return {
    async acquire(channel, holder, ttlMs) {
      const [current, epoch, expiresAt] = await script<[string, number, number]>(
        'channel-leases/acquire',
        channel,
        holder,
        ttlMs,
      );
      return { channel, holder: current, epoch, expiresAt };
    },
    async renew(lease, ttlMs) {
      const expiresAt = await script<number>(
        'channel-leases/renew',
        lease.channel,
        lease.holder,
        lease.epoch,
        ttlMs,
      );
      return expiresAt === 0 ? null : { ...lease, expiresAt };
    },
    async release(lease) {
      const released = await script<number>(
        'channel-leases/release',
        lease.channel,
        lease.holder,
        lease.epoch,
      );
      return released === 1;
    },
    async holders() {
      const flat = await script<Array<string | number>>('channel-leases/holders');
      const leases: ChannelLease[] = [];
      for (let i = 0; i < flat.length; i += 4) {
        leases.push({
          channel: String(flat[i]),
          holder: String(flat[i + 1]),
          epoch: Number(flat[i + 2]),
          expiresAt: Number(flat[i + 3]),
        });
      }
      return leases.sort((a, b) => a.channel.localeCompare(b.channel));
    },
    async close() {
      if (ownsClient) client.disconnect();
    },
  };
}
