import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis, type RedisOptions } from 'ioredis';
import { eventually } from './eventually.js';
import { processExists } from './process.js';
import { freePort } from './free-port.js';
import { startTcpProxy } from './tcp-proxy.js';

/** Fails at once instead of queueing or retrying while Redis is away: probes must not hang. */
const PROBE_OPTIONS: RedisOptions = {
  lazyConnect: true,
  enableOfflineQueue: false,
  maxRetriesPerRequest: 0,
  retryStrategy: () => null,
  commandTimeout: 2000,
};

/** The Redis the tests run against; every test keeps to a key prefix of its own. */
export const REDIS_URL = process.env.SWITCHBOARD_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

/**
 * Whether the shared Redis answers. Unreachable: the suites fail when `CI=true` (CI must never
 * skip them silently) and are skipped with a loud notice otherwise.
 */
export async function redisReachable(): Promise<boolean> {
  const probe = new Redis(REDIS_URL, PROBE_OPTIONS);
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
  const client = new Redis(url, PROBE_OPTIONS);
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

/**
 * A Redis of the test's own on a free port, for outage tests: stopping it touches nothing else.
 * Append-only with fsync on every write, so a restart keeps what was written; `settings` are
 * passed after those and so override them (`['--maxmemory-policy', 'allkeys-lru']`).
 */
export async function startPrivateRedis(settings: readonly string[] = []) {
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
        ...settings,
      ]);
      child.once('error', reject);
      child.once('exit', (code) =>
        code === 0 ? resolve() : reject(new Error(`redis-server exited with ${code}`)),
      );
    });
    await eventually(async () => {
      const probe = new Redis(url, PROBE_OPTIONS);
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

  /**
   * Stops this Redis (only the one whose pid file is ours) and waits until it is gone; `SIGKILL`
   * for a crash (the append-only file keeps every acknowledged write).
   */
  async function stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    const pid = Number(readFileSync(pidFile, 'utf8').trim());
    process.kill(pid, signal);
    await eventually(() => !processExists(pid));
  }

  await start();
  return {
    url,
    port,
    start,
    stop,
    /** Sends `signal` to this Redis without waiting (`SIGSTOP` freezes it, `SIGCONT` resumes it). */
    signal(signal: NodeJS.Signals): void {
      process.kill(Number(readFileSync(pidFile, 'utf8').trim()), signal);
    },
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

/**
 * A primary and one replica of the test's own on free ports, both without persistence (a
 * failover, not a restart, is what keeps data here), the replica in sync before this resolves.
 * The replication link runs through a TCP proxy, so that a test can hold it: the replica then
 * lags, and what the primary sent meanwhile dies with it.
 */
export async function startReplicatedRedis() {
  // A replica joining is served at once (the default waits 5 s for more to join).
  const noPersistence = ['--appendonly', 'no', '--repl-diskless-sync-delay', '0'];
  const primary = await startPrivateRedis(noPersistence);
  const link = await startTcpProxy(primary.port);
  const replica = await startPrivateRedis([...noPersistence, '--replicaof', '127.0.0.1', String(link.port)]);
  const inSync = (url: string) =>
    eventually(async () => (await infoField(url, 'replication', 'master_link_status')) === 'up');
  await inSync(replica.url);
  return {
    primary,
    replica,
    /** The replica receives nothing more from the primary from now on (it still acknowledges). */
    holdReplication(): void {
      link.hold();
    },
    /**
     * The primary dies (kill -9), with whatever the held link had not passed on, and the replica
     * is made the primary (`REPLICAOF NO ONE`).
     */
    async failover(): Promise<void> {
      await primary.stop('SIGKILL');
      await link.close();
      await command(replica.url, (client) => client.replicaof('NO', 'ONE'));
    },
    /** After `failover`: the old primary comes back empty as the new one's replica, in sync. */
    async rejoin(): Promise<void> {
      await primary.start();
      await command(primary.url, (client) => client.replicaof('127.0.0.1', String(replica.port)));
      await inSync(primary.url);
    },
    async remove(): Promise<void> {
      await link.close();
      await Promise.all([primary.remove(), replica.remove()]);
    },
  };
}

/** Runs `call` on a short-lived probe connection to `url`. */
export async function command<T>(url: string, call: (client: Redis) => Promise<T>): Promise<T> {
  const client = new Redis(url, PROBE_OPTIONS);
  client.on('error', () => {});
  try {
    await client.connect();
    return await call(client);
  } finally {
    client.disconnect();
  }
}

/** One field of `INFO <section>` of the Redis at `url`; undefined while it does not answer. */
export async function infoField(url: string, section: string, field: string): Promise<string | undefined> {
  try {
    const text = await command(url, (client) => client.info(section));
    return new RegExp(`^${field}:(.*)$`, 'm').exec(text)?.[1]?.trim();
  } catch {
    return undefined;
  }
}

/**
 * A Redis Cluster of the test's own: `shards` primaries (no replicas, no persistence) on free
 * ports, their slots spread by `redis-cli --cluster create`, `cluster_state:ok` on every node
 * before this resolves. `urls`: one per node, the seeds a cluster client starts from.
 */
export async function startPrivateCluster(shards = 3) {
  const nodes: Array<Awaited<ReturnType<typeof startPrivateRedis>>> = [];
  try {
    for (let shard = 0; shard < shards; shard++)
      nodes.push(await startPrivateRedis(['--appendonly', 'no', '--cluster-enabled', 'yes']));
    const addresses = nodes.map((node) => `127.0.0.1:${node.port}`);
    await new Promise<void>((resolve, reject) => {
      const child = spawn('redis-cli', ['--cluster', 'create', ...addresses, '--cluster-yes'], {
        stdio: 'ignore',
      });
      child.once('error', reject);
      child.once('exit', (code) =>
        code === 0 ? resolve() : reject(new Error(`redis-cli --cluster create exited with ${code}`)),
      );
    });
    await eventually(async () => {
      const views = await Promise.all(
        nodes.map((node) => command(node.url, (client) => client.cluster('INFO')).catch(() => '')),
      );
      return views.every((view) => /^cluster_state:ok/m.test(String(view)));
    }, 20_000);
  } catch (err) {
    await Promise.all(nodes.map((node) => node.remove()));
    throw err;
  }
  return {
    urls: nodes.map((node) => node.url),
    nodes,
    async remove(): Promise<void> {
      await Promise.all(nodes.map((node) => node.remove()));
    },
  };
}
