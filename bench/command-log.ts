/**
 * What a message costs in Redis commands, by the call that ran them: the built gateway with
 * `store: redis` (a private `redis-server`, `appendfsync everysec`) and `audit: postgres`, echo
 * pipeline, as BENCH_LOG_REPLICAS replicas (default 1) loaded as `cluster-throughput` loads them;
 * Redis' command log (`MONITOR`) is read over the measured run, and each command a script ran is
 * counted to the `EVALSHA` that ran it (Redis logs a script's commands right after its call), by
 * script name. Prints, per message (÷ the outcomes the replicas recorded meanwhile): each call
 * (script, or plain command) with the commands inside it.
 *
 * Not a scenario of `bench/run.ts`: `MONITOR` slows Redis, so the counts are exact and the
 * throughput is not. Run it after `npm run build`:
 * `node --import tsx bench/command-log.ts` (BENCH_LOG_REPLICAS, BENCH_HTTP_DURATION_S,
 * BENCH_REPLICA_WARMUP_MESSAGES, BENCH_POSTGRES_URL apply).
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadLuaScripts } from '@switchboard/store-redis';
import { queryPostgres } from '@switchboard/testkit/postgres';
import { startPrivateRedis } from '@switchboard/testkit/redis';
import { Redis } from 'ioredis';
import { startGateway } from './support/gateway-process.js';
import { loadAll, outcomesRecorded, warmUpEach } from './support/replica-fleet.js';
import type { ServerProcess } from './support/server-process.js';
import { SETTINGS } from './support/settings.js';

const replicaCount = SETTINGS.logReplicas;

/** One call as the log shows it: how often it came, and the commands the scripts among it ran. */
interface CallCount {
  calls: number;
  inner: Map<string, number>;
}

const scriptNames = new Map(
  (await loadLuaScripts()).map(({ name, source }) => [createHash('sha1').update(source).digest('hex'), name]),
);
const redis = await startPrivateRedis(['--appendfsync', 'everysec']);
const dir = mkdtempSync(join(tmpdir(), 'switchboard-command-log-'));
const prefix = `sb-log-${randomUUID()}`;
const schema = `sb_log_${randomBytes(8).toString('hex')}`;
const replicas: ServerProcess[] = [];
const monitor = new Redis(redis.url);
try {
  const stores = {
    name: 'command-log',
    store: `{ kind: redis, url: ${JSON.stringify(redis.url)}, prefix: ${prefix} }`,
    audit: `{ kind: postgres, url: ${JSON.stringify(SETTINGS.postgresUrl)}, schema: ${schema} }`,
  };
  for (let replica = 0; replica < replicaCount; replica++) replicas.push(await startGateway(stores, dir));
  await warmUpEach(replicas, SETTINGS.replicaWarmupMessages);

  const counts = new Map<string, CallCount>();
  let last: CallCount | undefined;
  let commands = 0;
  const log = await monitor.monitor();
  log.on('monitor', (_time: string, args: string[], source: string) => {
    commands += 1;
    const name = (args[0] ?? '').toUpperCase();
    if (source.includes('lua')) {
      if (last !== undefined) last.inner.set(name, (last.inner.get(name) ?? 0) + 1);
      return;
    }
    // A script ioredis sends whole after a NOSCRIPT reply is named by its SHA as well; what
    // follows a channel's kind names a replica, a session or a chat: the kind is what counts.
    const sha =
      name === 'EVAL'
        ? createHash('sha1')
            .update(args[1] ?? '')
            .digest('hex')
        : args[1];
    const call =
      name === 'EVALSHA' || name === 'EVAL'
        ? `${name} ${scriptNames.get(sha ?? '') ?? sha}`
        : name === 'PUBLISH'
          ? `PUBLISH ${(args[1] ?? '').replace(`{${prefix}}`, '{prefix}').replace(/^(\{prefix\}:[^:]+):.*$/, '$1:*')}`
          : name;
    last = counts.get(call) ?? { calls: 0, inner: new Map() };
    last.calls += 1;
    counts.set(call, last);
  });
  const outcomesBefore = await outcomesRecorded(replicas);
  await loadAll(replicas, SETTINGS.httpDurationS);
  const messages = (await outcomesRecorded(replicas)) - outcomesBefore;
  // The log's lines arrive after their commands ran: it ends at a marker sent after the run.
  const marker = `command-log-end-${randomUUID()}`;
  const ended = new Promise<void>((resolve) =>
    log.on('monitor', (_time: string, args: string[]) => {
      if (args[1] === marker) resolve();
    }),
  );
  const marking = monitor.duplicate();
  try {
    await marking.echo(marker);
  } finally {
    marking.disconnect();
  }
  await ended;
  log.disconnect();

  const perMessage = (count: number) => (count / messages).toFixed(3);
  console.log(
    `${replicaCount} replica(s), ${messages} messages: ${perMessage(commands)} Redis commands per message`,
  );
  for (const [call, count] of [...counts].sort((a, b) => b[1].calls - a[1].calls)) {
    const inner = [...count.inner].sort((a, b) => b[1] - a[1]);
    const innerTotal = inner.reduce((sum, [, n]) => sum + n, 0);
    const detail = inner.map(([name, n]) => `${name} ${perMessage(n)}`).join(', ');
    console.log(
      `${perMessage(count.calls).padStart(8)}  ${call}${innerTotal > 0 ? ` — ${perMessage(innerTotal)} inside: ${detail}` : ''}`,
    );
  }
} finally {
  monitor.disconnect();
  await Promise.all(replicas.map((replica) => replica.stop()));
  await redis.remove();
  await queryPostgres(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`, [], SETTINGS.postgresUrl);
  rmSync(dir, { recursive: true, force: true });
}
