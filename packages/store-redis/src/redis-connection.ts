/// <reference path="./cluster-key-slot.d.ts" />
import { once } from 'node:events';
import { SwitchboardError } from '@switchboard/core';
import calculateSlot from 'cluster-key-slot';
import { Cluster, Redis, type RedisOptions } from 'ioredis';
import { writeOncePerLoopTurn } from './loop-turn-writes.js';

/** The longest wait between two reconnect attempts of a connection to one Redis. */
const RECONNECT_MAX_DELAY_MS = 1000;

/**
 * Doubling from 50 ms up to `RECONNECT_MAX_DELAY_MS`, each wait drawn from its upper half: the
 * connections of a fleet that lost Redis together spread their attempts over half a period.
 */
function reconnectDelay(times: number): number {
  const delay = Math.min(50 * 2 ** (times - 1), RECONNECT_MAX_DELAY_MS);
  return Math.round(delay / 2 + (Math.random() * delay) / 2);
}

/**
 * Client options that make a command fail at once while Redis is unreachable, instead of waiting
 * in ioredis' offline queue and running after the reconnect (by then its caller has long told
 * the platform to send again): no offline queue, no retry of a command, no resend after a
 * reconnect, and a bound on every command. ioredis still reconnects by itself. A command that may
 * have run is not sent again by ioredis (see `createRedisClient` for a cluster client): its caller
 * decides (`mayHaveRun`) and repeats it with its repeat flag, so a script whose reply was lost
 * does not run a second time as a first call. Reconnect attempts are at most
 * `RECONNECT_MAX_DELAY_MS` apart (ioredis' own backoff grows to 5 s): a gateway whose Redis was
 * restarted is ready again within about a second of its return, however long it was away. (Each
 * attempt at a host that does not answer at all still waits ioredis' 10 s connect timeout.)
 */
export const FAIL_FAST_OPTIONS = {
  enableOfflineQueue: false,
  maxRetriesPerRequest: 0,
  autoResendUnfulfilledCommands: false,
  commandTimeout: 2000,
  lazyConnect: true,
  retryStrategy: reconnectDelay,
} as const satisfies RedisOptions;

/**
 * Where the store's Redis is (`store.url` or `store.cluster`): one Redis URL, or the seed URLs of a
 * Redis Cluster, of which any reachable one is enough to find the others.
 */
export type RedisTarget = string | readonly string[];

/** A connection to one Redis, or a client of a Redis Cluster (a connection per node it uses). */
export type RedisClient = Redis | Cluster;

/**
 * A fail-fast client of `target` (`FAIL_FAST_OPTIONS`) whose connections send the commands of a
 * turn of the event loop in one write (`writeOncePerLoopTurn`). A cluster's nodes take the first seed's credentials and
 * TLS; every key of a deployment sits in one slot (`{<prefix>}`), so its commands and scripts go
 * to the one primary holding it, and the client follows that slot when it moves.
 */
export function createRedisClient(target: RedisTarget): RedisClient {
  const client = connectionOf(target);
  writeOncePerLoopTurn(client);
  return client;
}

function connectionOf(target: RedisTarget): RedisClient {
  if (typeof target === 'string') return new Redis(target, FAIL_FAST_OPTIONS);
  const seeds = target.map((url) => new URL(url));
  const first = seeds[0];
  if (first === undefined) throw new Error('a Redis Cluster needs at least one seed URL');
  const { lazyConnect, enableOfflineQueue, ...nodeOptions } = FAIL_FAST_OPTIONS;
  return new Cluster(
    seeds.map((url) => ({ host: url.hostname, port: Number(url.port || 6379) })),
    {
      lazyConnect,
      enableOfflineQueue,
      // The client sends a command again, at most 16 times, only when Redis did not run it:
      // redirected or refused (MOVED, ASK, TRYAGAIN, CLUSTERDOWN), or refused before sending
      // because its node's connection is not up yet ("Connection is closed.", retried after
      // `retryDelayOnFailover` with a fresh slot map).
      maxRedirections: 16,
      retryDelayOnMoved: 0,
      retryDelayOnTryAgain: 100,
      retryDelayOnClusterDown: 100,
      retryDelayOnFailover: 100,
      // A node connection that drops fails the commands it had sent, which may have run, with
      // `MaxRetriesPerRequestError` (`maxRetriesPerRequest: 0`; not retried), then tries once
      // more at once. Without a strategy it would fail them with "Connection is closed." too, and
      // the client would send them again. It still does so when it closes a node connection
      // itself (a node gone from the slot map, a stale one replaced) with a command on it. It
      // takes the place of `retryStrategy` for the node connections.
      clusterNodeRetryStrategy: (times) => (times === 1 ? 0 : null),
      // A node connection that ends (its second try failed too) is dropped from the pool, and
      // the client adds a node back only from a slot map it reads again: after a `MOVED` reply,
      // which a command sent on a node's own connection (`primaryOf`) never meets, or every
      // interval here (one `CLUSTER SLOTS` on a short-lived connection). Without it a primary
      // back from a restart stays unknown to the client, which its other nodes keep ready.
      slotsRefreshInterval: 5000,
      redisOptions: {
        ...nodeOptions,
        ...(first.username === '' ? {} : { username: decodeURIComponent(first.username) }),
        ...(first.password === '' ? {} : { password: decodeURIComponent(first.password) }),
        ...(first.protocol === 'rediss:' ? { tls: {} } : {}),
      },
    },
  );
}

/**
 * The connection to the primary that holds `{<prefix>}`'s slot, for the commands without a key
 * that must reach it (`TIME`, `WAIT`, `INFO`): a cluster client would send them to any node, and
 * a `WAIT` counts the writes of the connection it is sent on. A single Redis is its own. Throws
 * while a cluster client does not know that slot's node (not connected, the slot moving, or its
 * connection ended until the next slot map read of `createRedisClient`'s interval).
 */
export function primaryOf(client: RedisClient, prefix: string): Redis {
  if (client instanceof Redis) return client;
  const holder = client.slots[calculateSlot(`{${prefix}}`)]?.[0];
  const node = client.nodes('master').find((each) => `${each.options.host}:${each.options.port}` === holder);
  if (node === undefined) throw new Error(`no Redis Cluster node is known to hold the slot of {${prefix}}`);
  return node;
}

/** Makes the pool's connections: one for commands, one subscribed to the wake-up channel. */
export type RedisClientFactory = (role: 'commands' | 'subscriber') => RedisClient;

/** A factory connecting to `target` with `FAIL_FAST_OPTIONS`. */
export function redisClientFactory(target: RedisTarget): RedisClientFactory {
  return () => createRedisClient(target);
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

/**
 * ioredis' rejections of a command it never sent: the connection down (no offline queue), a
 * cluster client not ready (no offline queue either), or a cluster client giving up after its
 * last try was refused with a redirection (its earlier tries were refused or not sent, as
 * `createRedisClient` describes).
 */
const NOT_SENT = [
  /^Stream isn't writeable/,
  /^Cluster isn't ready/,
  /^Too many Cluster redirections\. Last error: ReplyError: (MOVED|ASK|TRYAGAIN|CLUSTERDOWN)\b/,
];

/**
 * Whether Redis may have run the command whose call failed with `err` (a `storeFailure`): its
 * reply was lost (a timeout, a connection cut after the command left). Not when ioredis never
 * sent it, nor when Redis answered with an error reply.
 */
export function mayHaveRun(err: unknown): boolean {
  const cause = err instanceof SwitchboardError ? err.cause : err;
  if (!(cause instanceof Error)) return false;
  return cause.name !== 'ReplyError' && !NOT_SENT.some((pattern) => pattern.test(cause.message));
}

/**
 * Waits until `client` is ready, connecting it if it was made with `lazyConnect`; on failure
 * closes it, so that its reconnect loop stops.
 */
export async function connect(client: RedisClient, retryAfterMs: number): Promise<void> {
  try {
    if (client.status !== 'ready') await readyOnce(client);
  } catch (err) {
    client.disconnect();
    throw storeFailure(err, retryAfterMs);
  }
}

/**
 * The wait for `client` to be ready, one for all its callers: the stores of a partitioned
 * deployment open together on one client, and a listener pair each would pass Node's
 * listener-leak warning from 11 partitions on.
 */
const readiness = new WeakMap<RedisClient, Promise<void>>();

function readyOnce(client: RedisClient): Promise<void> {
  let ready = readiness.get(client);
  if (ready === undefined) {
    ready = client.status === 'wait' ? client.connect() : once(client, 'ready').then(() => {});
    readiness.set(client, ready);
    // Forgotten once settled: a later wait (after a reconnect) is a wait of its own.
    ready.then(
      () => readiness.delete(client),
      () => readiness.delete(client),
    );
  }
  return ready;
}
