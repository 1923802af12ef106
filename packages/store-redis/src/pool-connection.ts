import type { Logger } from '@switchboard/core';
import { assertDataFormat } from './data-format.js';
import { type ScriptOf, defineLuaScripts, runScript } from './lua-scripts.js';
import type { PoolKeys } from './pool-keys.js';
import { startRedisClock } from './redis-clock.js';
import { type RedisClient, type RedisClientFactory, connect, storeFailure } from './redis-connection.js';
import { type ReplicationOptions, replicatedWrites } from './replication-wait.js';

/** A pool's two connections, its clock, and the calls of its scripts. */
export interface PoolConnection {
  client: RedisClient;
  /** Subscribed to the pool's wake-up channel only. */
  subscriber: RedisClient;
  now(): number;
  /**
   * Runs `script` with the pool's KEYS and the ARGV every script starts with (prefix, now,
   * replica); after a write, waits for the replicas `replication` asks for.
   */
  call<Reply>(script: ScriptOf<'pool'>, args: ReadonlyArray<string | number>): Promise<Reply>;
  /** Stops the clock and quits both connections (drops them at once when Redis is gone). */
  close(): Promise<void>;
}

export interface PoolConnectionOptions {
  createClient: RedisClientFactory;
  /** The deployment's prefix, whose data format is checked before anything else. */
  prefix: string;
  keys: PoolKeys;
  replicaId: string;
  /** The caller's clock; without one, this host's clock corrected to Redis' `TIME`. */
  now: (() => number) | undefined;
  clockRemeasureEveryMs: number;
  /** For `SB_STORE_UNAVAILABLE` when Redis does not answer. */
  retryAfterMs: number;
  /** Replicas that must hold a write before it is answered; none waited for without. */
  replication: ReplicationOptions | undefined;
  logger: Logger;
}

/**
 * Connects both clients, checks the data format and defines the scripts; on failure leaves
 * nothing open behind.
 */
export async function openPoolConnection(options: PoolConnectionOptions): Promise<PoolConnection> {
  const { keys, replicaId, logger } = options;
  const client = options.createClient('commands');
  const subscriber = options.createClient('subscriber');
  watchConnection(client, 'commands', logger);
  watchConnection(subscriber, 'subscriber', logger);
  let now = options.now;
  let stopClock = () => {};
  try {
    await Promise.all([connect(client, options.retryAfterMs), connect(subscriber, options.retryAfterMs)]);
    await assertDataFormat(client, options.prefix);
    await defineLuaScripts(client);
    if (now === undefined) {
      const clock = await startRedisClock(client, {
        prefix: options.prefix,
        remeasureEveryMs: options.clockRemeasureEveryMs,
        logger,
      });
      now = clock.now;
      stopClock = clock.stop;
    }
  } catch (err) {
    client.disconnect();
    subscriber.disconnect();
    throw storeFailure(err, options.retryAfterMs);
  }
  const clock = now;
  const replicated = replicatedWrites(client, options.prefix, options.replication, options.retryAfterMs);
  return {
    client,
    subscriber,
    now: clock,
    call<Reply>(script: ScriptOf<'pool'>, args: ReadonlyArray<string | number>) {
      return replicated(
        script,
        runScript<Reply>(client, script, keys.keys, [keys.prefix, clock(), replicaId, ...args]),
      );
    },
    async close() {
      stopClock();
      try {
        await Promise.all([subscriber.quit(), client.quit()]);
      } catch {
        client.disconnect();
        subscriber.disconnect();
      }
    },
  };
}

/** Logs a connection's loss and its return once each, not every reconnect attempt. */
function watchConnection(connection: RedisClient, role: string, logger: Logger): void {
  let lost = false;
  connection.on('error', (err: unknown) => {
    if (lost) return;
    lost = true;
    logger.warn({ err, connection: role }, 'redis connection lost: reconnecting');
  });
  connection.on('ready', () => {
    if (!lost) return;
    lost = false;
    logger.info({ connection: role }, 'redis connection restored');
  });
}
