import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type Logger,
  type PipelinePolicyInput,
  PipelinePolicySchema,
  type QueuedMessage,
} from '@switchboard/core';
import { queuedMessageFixture } from '@switchboard/core/testing';
import { eventually } from '@switchboard/testkit/eventually';
import { Redis } from 'ioredis';
import { afterEach } from 'vitest';
import {
  FAIL_FAST_OPTIONS,
  createRedisQueryPool,
  type RedisQueryPool,
  type RedisQueryPoolOptions,
} from '../src/index.js';
import { commandNameOf, defineLuaScripts } from '../src/lua-scripts.js';
import { poolKeysOf } from '../src/pool-keys.js';

/** The Redis the tests run against; every test keeps to a key prefix of its own. */
export const REDIS_URL = process.env.SWITCHBOARD_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

/**
 * Whether the shared Redis answers. Unreachable: the suites fail when `CI=true` (CI must never
 * skip them silently) and are skipped with a loud notice otherwise.
 */
export async function redisReachable(): Promise<boolean> {
  const probe = new Redis(REDIS_URL, { ...FAIL_FAST_OPTIONS, retryStrategy: () => null });
  probe.on('error', () => {});
  try {
    await probe.connect();
    await probe.ping();
    return true;
  } catch (err) {
    if (process.env.CI === 'true')
      throw new Error(`Redis at ${REDIS_URL} is unreachable and CI=true`, { cause: err });
    console.warn(
      `\n!!! SKIPPING the Redis store tests: no Redis at ${REDIS_URL} (set CI=true to fail instead) !!!\n`,
    );
    return false;
  } finally {
    probe.disconnect();
  }
}

/** Every key of a pool prefix, found with SCAN (KEYS would block the shared Redis). */
export async function poolKeyNames(client: Redis, prefix: string): Promise<string[]> {
  const names: string[] = [];
  let cursor = '0';
  do {
    const [next, found] = await client.scan(cursor, 'MATCH', `{${prefix}}:*`, 'COUNT', 500);
    names.push(...found);
    cursor = next;
  } while (cursor !== '0');
  return names;
}

/** Deletes every key of a pool prefix. */
export async function removePoolKeys(url: string, prefix: string): Promise<void> {
  const client = new Redis(url, { ...FAIL_FAST_OPTIONS, retryStrategy: () => null });
  client.on('error', () => {});
  try {
    await client.connect();
    const names = await poolKeyNames(client, prefix);
    if (names.length > 0) await client.del(...names);
  } catch {
    // A private Redis already stopped takes its keys with it.
  } finally {
    client.disconnect();
  }
}

/** A clock the test moves by hand. */
export function manualClock(startMs = Date.UTC(2025, 0, 1)) {
  let nowMs = startMs;
  return {
    now: () => nowMs,
    advance(ms: number) {
      nowMs += ms;
    },
  };
}

export interface PoolSetup extends Partial<Omit<RedisQueryPoolOptions, 'pipelines'>> {
  pipelines?: PipelinePolicyInput[];
}

/**
 * Pools of one test on one random prefix of the Redis at `url()`, shut down and their keys
 * removed after the test. Each `open` is another replica on the same prefix.
 */
export function usePools(url: () => string = () => REDIS_URL) {
  const opened: RedisQueryPool[] = [];
  const prefixes = new Set<string>();
  let prefix = `sb-test-${randomUUID()}`;

  afterEach(async () => {
    for (const pool of opened.splice(0)) await pool.shutdown();
    for (const used of prefixes) await removePoolKeys(url(), used);
    prefixes.clear();
    prefix = `sb-test-${randomUUID()}`;
  });

  return {
    get prefix() {
      return prefix;
    },
    async open(setup: PoolSetup = {}): Promise<RedisQueryPool> {
      const { pipelines = [{ id: 'p' }, { id: 'q' }], ...rest } = setup;
      const options: RedisQueryPoolOptions = {
        url: url(),
        prefix,
        concurrency: { global: 20, perSession: 1 },
        limits: { maxPending: 10_000, maxPendingPerSession: 500 },
        pipelines: pipelines.map((input) => PipelinePolicySchema.parse(input)),
        ...rest,
      };
      prefixes.add(options.prefix);
      const pool = await createRedisQueryPool(options);
      opened.push(pool);
      return pool;
    },
    /** Shuts `pool` down before the test ends (its keys are still removed afterwards). */
    async shutdown(pool: RedisQueryPool) {
      opened.splice(opened.indexOf(pool), 1);
      await pool.shutdown();
    },
  };
}

let sequence = 0;
/** A message for `session` (one sender per session, so debounce may merge a session's messages). */
export function queued(
  session: string,
  acceptedAt: number,
  extra: Partial<QueuedMessage> = {},
): QueuedMessage {
  sequence += 1;
  const base = queuedMessageFixture(sequence);
  base.message.sender = { id: `sender-${session}`, is_bot: false };
  return { ...base, session, pipeline: 'p', attempt: 0, acceptedAt, ...extra };
}

/** A free TCP port on 127.0.0.1. */
async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address !== null ? address.port : 0));
    });
  });
}

/**
 * A Redis of the test's own on a free port, for outage tests: stopping it touches nothing else.
 * Append-only with fsync on every write, so a restart keeps what was written.
 */
export async function startPrivateRedis() {
  const port = await freePort();
  const folder = mkdtempSync(join(tmpdir(), 'switchboard-redis-'));
  const pidFile = join(folder, 'redis.pid');
  const url = `redis://127.0.0.1:${port}`;

  async function start(): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      const child = spawn('redis-server', [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--save',
        '',
        '--appendonly',
        'yes',
        '--appendfsync',
        'always',
        '--dir',
        folder,
        '--daemonize',
        'yes',
        '--pidfile',
        pidFile,
      ]);
      child.once('error', reject);
      child.once('exit', (code) =>
        code === 0 ? resolve() : reject(new Error(`redis-server exited with ${code}`)),
      );
    });
    await eventually(async () => {
      const probe = new Redis(url, { ...FAIL_FAST_OPTIONS, retryStrategy: () => null });
      probe.on('error', () => {});
      try {
        await probe.connect();
        return (await probe.ping()) === 'PONG';
      } catch {
        return false;
      } finally {
        probe.disconnect();
      }
    });
  }

  /** Stops this Redis (only the one whose pid file is ours) and waits until its port is closed. */
  async function stop(): Promise<void> {
    const pid = Number(readFileSync(pidFile, 'utf8').trim());
    process.kill(pid, 'SIGTERM');
    await eventually(() => {
      try {
        process.kill(pid, 0);
        return false;
      } catch {
        return true;
      }
    });
  }

  await start();
  return {
    url,
    start,
    stop,
    async remove() {
      try {
        await stop();
      } catch {
        // Already stopped.
      }
      rmSync(folder, { recursive: true, force: true });
    },
  };
}

/** A log line kept by `recordingLogger`. */
export interface LogLine {
  level: 'debug' | 'info' | 'warn' | 'error';
  bindings: Record<string, unknown>;
  message: string;
}

/** A logger that keeps every line, bindings included, for assertions. */
export function recordingLogger(): Logger & { lines: LogLine[] } {
  const lines: LogLine[] = [];
  const make = (inherited: Record<string, unknown>): Logger & { lines: LogLine[] } => {
    const log = (level: LogLine['level']) => (bindings: object, message: string) =>
      void lines.push({ level, bindings: { ...inherited, ...bindings }, message });
    return {
      lines,
      debug: log('debug'),
      info: log('info'),
      warn: log('warn'),
      error: log('error'),
      child: (bindings) => make({ ...inherited, ...bindings }),
    };
  };
  return make({});
}

/**
 * Calls the pool's scripts directly, as replica `replicaId`, for tests of one script's behaviour
 * (a pool on the same prefix must have registered the configuration first).
 */
export async function openScriptRunner(
  url: string,
  prefix: string,
  now: () => number,
  replicaId = 'script-runner',
) {
  const client = new Redis(url, FAIL_FAST_OPTIONS);
  await client.connect();
  await defineLuaScripts(client);
  const keys = poolKeysOf(prefix);
  const commands = client as unknown as Record<string, (...args: Array<string | number>) => Promise<unknown>>;
  return {
    client,
    keys,
    run(script: string, ...args: Array<string | number>): Promise<unknown> {
      return (commands[commandNameOf(script)] as (...a: Array<string | number>) => Promise<unknown>).call(
        client,
        ...keys.keys,
        keys.prefix,
        now(),
        replicaId,
        ...args,
      );
    },
    close: () => client.quit(),
  };
}
