import { type ProbeResult, createSecretMasker } from '@switchboard/core';
import { Redis } from 'ioredis';
import { FAIL_FAST_OPTIONS } from './redis-connection.js';

/** Options of `probeRedisStore`. */
export interface RedisProbeOptions {
  /** `store.url`; it may hold a password, which no result shows. */
  url: string;
  /** How long connecting and each command may take, in ms. */
  timeoutMs: number;
  /** The most Redis' clock may differ from this host's before the check fails, in ms. */
  maxClockSkewMs: number;
}

/** What `probeRedisStore` checked; only `connection` when Redis could not be reached. */
export interface RedisProbe {
  connection: ProbeResult;
  eviction?: ProbeResult;
  persistence?: ProbeResult;
  clock?: ProbeResult;
}

/** `host:port` of a Redis URL, without its credentials. */
function targetOf(url: string): string {
  const parsed = new URL(url);
  return `${parsed.hostname}:${parsed.port || '6379'}`;
}

/** `CONFIG GET name`'s value, or undefined when Redis refuses CONFIG (managed services rename or forbid it). */
async function configValue(client: Redis, name: string): Promise<string | undefined> {
  try {
    const answer = (await client.config('GET', name)) as string[];
    return answer[1];
  } catch (error) {
    if (error instanceof Error && error.name === 'ReplyError') return undefined;
    throw error;
  }
}

/** One `name:value` field of an `INFO section` answer. */
async function infoField(client: Redis, section: string, name: string): Promise<string | undefined> {
  try {
    return new RegExp(`^${name}:(\\S+)`, 'm').exec(await client.info(section))?.[1];
  } catch (error) {
    if (error instanceof Error && error.name === 'ReplyError') return undefined;
    throw error;
  }
}

/** Under any policy but `noeviction`, a full Redis drops queued messages and leases instead of refusing writes. */
async function probeEviction(client: Redis): Promise<ProbeResult> {
  // INFO memory names the policy too, where a managed Redis refuses CONFIG.
  const policy =
    (await configValue(client, 'maxmemory-policy')) ??
    (await infoField(client, 'memory', 'maxmemory_policy'));
  if (policy === undefined) {
    return {
      level: 'warn',
      detail: 'maxmemory-policy unknown: Redis refuses CONFIG GET and INFO memory',
      hint: "check in the provider's settings that maxmemory-policy is noeviction",
    };
  }
  if (policy !== 'noeviction') {
    return {
      level: 'fail',
      detail: `maxmemory-policy is ${policy}: a full Redis would evict queued messages and leases`,
      hint: 'set maxmemory-policy noeviction (redis.conf, CONFIG SET, or the provider settings)',
    };
  }
  return { level: 'ok', detail: 'maxmemory-policy noeviction' };
}

/**
 * How much of what was acknowledged survives a Redis restart: append-only with fsync every
 * second or always keeps (nearly) all; snapshots alone lose the writes since the last one.
 * Never a failure: a deployment may accept the loss, but it should know of it.
 */
async function probePersistence(client: Redis): Promise<ProbeResult> {
  const appendonly =
    (await configValue(client, 'appendonly')) ??
    { '1': 'yes', '0': 'no' }[(await infoField(client, 'persistence', 'aof_enabled')) ?? ''];
  const appendfsync = await configValue(client, 'appendfsync');
  const save = await configValue(client, 'save');
  if (appendonly === undefined) {
    return {
      level: 'warn',
      detail: 'persistence unknown: Redis refuses CONFIG GET and INFO persistence',
      hint: "check in the provider's settings that append-only persistence is on",
    };
  }
  const hint = 'set appendonly yes and appendfsync everysec (or always)';
  if (appendonly === 'yes') {
    return appendfsync === 'no'
      ? {
          level: 'warn',
          detail:
            'appendonly yes, appendfsync no: the system flushes when it likes, a host crash loses recent writes',
          hint,
        }
      : { level: 'ok', detail: `appendonly yes, appendfsync ${appendfsync ?? 'unknown'}` };
  }
  if (save === '') {
    return {
      level: 'warn',
      detail: 'no persistence (appendonly no, no snapshots): a Redis restart loses every queued message',
      hint,
    };
  }
  return {
    level: 'warn',
    detail: `appendonly no, snapshots ${save === undefined ? 'unknown' : `"${save}"`}: a Redis restart loses what was written since the last snapshot`,
    hint,
  };
}

/** Redis' `TIME` against this host's clock, taking the middle of the round trip as Redis' moment. */
async function probeClock(client: Redis, maxClockSkewMs: number): Promise<ProbeResult> {
  const sentAt = Date.now();
  const [seconds, microseconds] = await client.time();
  const receivedAt = Date.now();
  const redisMs = Number(seconds) * 1000 + Math.floor(Number(microseconds) / 1000);
  const skewMs = Math.round(redisMs - (sentAt + receivedAt) / 2);
  const measured = `clock skew ${skewMs} ms (round trip ${receivedAt - sentAt} ms, bound ${maxClockSkewMs} ms)`;
  if (Math.abs(skewMs) > maxClockSkewMs) {
    return {
      level: 'fail',
      detail: measured,
      hint: "synchronise this host's clock and the Redis host's (NTP): replicas time leases by Redis' clock",
    };
  }
  return { level: 'ok', detail: measured };
}

/**
 * The read-only check of `store: redis` (`switchboard doctor`): connects, then reads the
 * eviction policy (`noeviction` or fail), the persistence settings (a warning when a restart
 * would lose writes) and the clock skew against this host. Writes no key.
 */
export async function probeRedisStore(options: RedisProbeOptions): Promise<RedisProbe> {
  const target = targetOf(options.url);
  const mask = createSecretMasker([options.url, new URL(options.url).password].filter(Boolean));
  const client = new Redis(options.url, {
    ...FAIL_FAST_OPTIONS,
    connectTimeout: options.timeoutMs,
    commandTimeout: options.timeoutMs,
    // One try: a probe reports what it found, it does not wait for Redis to come.
    retryStrategy: () => null,
  });
  client.on('error', () => {});
  try {
    await client.connect();
    const version = await infoField(client, 'server', 'redis_version');
    const [eviction, persistence, clock] = await Promise.all([
      probeEviction(client),
      probePersistence(client),
      probeClock(client, options.maxClockSkewMs),
    ]);
    return {
      connection: {
        level: 'ok',
        detail: `connected to ${target} (Redis ${version ?? 'of unknown version'})`,
      },
      eviction,
      persistence,
      clock,
    };
  } catch (error) {
    const reason = error instanceof Error ? error.message || error.name : String(error);
    return {
      connection: {
        level: 'fail',
        detail: mask(`unreachable: ${reason} (${target})`),
        hint: 'start Redis, or fix store.url (host, port, password, rediss:// for TLS)',
      },
    };
  } finally {
    client.disconnect();
  }
}
