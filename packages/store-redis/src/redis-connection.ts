import { once } from 'node:events';
import { SwitchboardError } from '@switchboard/core';
import { Redis, type RedisOptions } from 'ioredis';

/**
 * Client options that make a command fail at once while Redis is unreachable, instead of waiting
 * in ioredis' offline queue and running after the reconnect (by then its caller has long told
 * the platform to send again): no offline queue, no retry of a command, no resend after a
 * reconnect, and a bound on every command. ioredis still reconnects by itself.
 */
export const FAIL_FAST_OPTIONS = {
  enableOfflineQueue: false,
  maxRetriesPerRequest: 0,
  autoResendUnfulfilledCommands: false,
  commandTimeout: 2000,
  lazyConnect: true,
} as const satisfies RedisOptions;

/** Makes the pool's connections: one for commands, one subscribed to the wake-up channel. */
export type RedisClientFactory = (role: 'commands' | 'subscriber') => Redis;

/** A factory connecting to `url` with `FAIL_FAST_OPTIONS`. */
export function redisClientFactory(url: string): RedisClientFactory {
  return () => new Redis(url, FAIL_FAST_OPTIONS);
}

/**
 * Redis error replies that mean "not now" rather than a bug: loading, out of memory under
 * `noeviction`, a replica, a busy script, a cluster without quorum.
 */
const UNAVAILABLE_REPLY = /^(LOADING|OOM|READONLY|MASTERDOWN|BUSY|NOREPLICAS|CLUSTERDOWN|TRYAGAIN)\b/;

/**
 * A failure of a Redis call as callers should see it: `SB_STORE_UNAVAILABLE` (retryable after
 * `retryAfterMs`) when Redis cannot answer now; any other error reply (a script bug) unchanged.
 */
export function storeFailure(err: unknown, retryAfterMs: number): unknown {
  if (err instanceof SwitchboardError) return err;
  const isReply = err instanceof Error && err.name === 'ReplyError';
  if (isReply && !UNAVAILABLE_REPLY.test(err.message)) return err;
  return new SwitchboardError('SB_STORE_UNAVAILABLE', {
    message: `redis is unreachable: ${err instanceof Error ? err.message : String(err)}`,
    retryable: true,
    retryAfterMs,
    cause: err,
  });
}

/** ioredis' rejection of a command while the connection is down (no offline queue): never sent. */
const NOT_SENT = "Stream isn't writeable";

/**
 * Whether Redis may have run the command whose call failed with `err` (a `storeFailure`): its
 * reply was lost (a timeout, a connection cut after the command left). Not when ioredis never
 * sent it, nor when Redis answered with an error reply.
 */
export function mayHaveRun(err: unknown): boolean {
  const cause = err instanceof SwitchboardError ? err.cause : err;
  if (!(cause instanceof Error)) return false;
  return cause.name !== 'ReplyError' && !cause.message.startsWith(NOT_SENT);
}

/**
 * Waits until `client` is ready, connecting it if it was made with `lazyConnect`; on failure
 * closes it, so that its reconnect loop stops.
 */
export async function connect(client: Redis, retryAfterMs: number): Promise<void> {
  try {
    if (client.status === 'wait') await client.connect();
    else if (client.status !== 'ready') await once(client, 'ready');
  } catch (err) {
    client.disconnect();
    throw storeFailure(err, retryAfterMs);
  }
}
