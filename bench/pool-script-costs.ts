/**
 * What each Redis script of a message costs, one script at a time: the pool's enqueue, claim and
 * complete, then the reply outbox's add, claim and removal (`delivered`), each message and each
 * delivery in a session (chat) of its own, one call in flight. Per script: the commands Redis ran
 * (`INFO commandstats` delta over every command, EVALSHA included, ÷ calls), by command; the µs
 * Redis spent in the scripts (EVALSHA's `usec`, the commands they call included: wall time); and
 * the CPU time of Redis' main thread per call (`INFO cpu`), which adds reading each call and
 * writing its reply, and leaves out the time Redis waited for a core.
 *
 * The pool's three scripts are measured twice: with one tenant, and with two competing tenants
 * (whose use the scripts then count, docs/design.md §10 "Fair shares"); then enqueue and complete
 * as a running controller calls them, claiming in the same step (docs/design.md §5 "Claims in
 * the same step").
 *
 * Not a scenario of `bench/run.ts`: a profile to read beside `pool-claims`. The counts are exact
 * whatever the load; the times are not (a loaded machine inflates the wall time most), so
 * compare them only with a run of the same moment. The Redis must be one nobody else uses
 * (`BENCH_REDIS_URL`): another client's commands would count in. Run it with
 * `node --import tsx bench/pool-script-costs.ts` after `npm run build`.
 */
import { randomUUID } from 'node:crypto';
import { deliveryFixture } from '@switchboard/contracts';
import type { DeliveryClaim, QueuedMessage, Turn } from '@switchboard/core';
import { createRedisQueryPool, createRedisReplyOutbox } from '@switchboard/store-redis';
import { Redis } from 'ioredis';
import { callsPerCycle, commandStats } from './support/redis-commandstats.js';
import { removePoolKeys } from './support/redis-prefix-keys.js';
import { SETTINGS } from './support/settings.js';
import { benchPoolSettings, queuedMessageOf } from './support/switchboard-scheduler.js';
import { benchMessage } from './support/workloads.js';

const CALLS = SETTINGS.scriptCalls;
/** Slots no claim waits for. */
const SLOTS = { globalLimit: 100_000, sessionLimit: 1 };
/** Renewals of the turns claimed meanwhile would count in with the claims: none comes within a run. */
const NO_RENEWAL = { leaseMs: 3_600_000, renewEveryMs: 1_200_000, fenceAfterMs: 2_400_000 };

const admin = new Redis(SETTINGS.redisUrl);
const rows: string[] = [];

/**
 * CPU time Redis' main thread has used, µs: unlike EVALSHA's `usec` (wall time), it does not
 * count the time Redis waited for a core on a loaded machine, and it counts the reading of the
 * call and the writing of its reply.
 */
async function redisCpuUs(): Promise<number> {
  const info = await admin.info('cpu');
  const seconds = (name: string) => Number(info.match(new RegExp(`^${name}:([\\d.]+)`, 'm'))?.[1] ?? 0);
  return (seconds('used_cpu_user_main_thread') + seconds('used_cpu_sys_main_thread')) * 1e6;
}

/** Runs `body`, which calls one script CALLS times, and notes what Redis ran meanwhile. */
async function measure(script: string, body: () => Promise<void>): Promise<void> {
  const before = await commandStats(admin);
  const cpuBefore = await redisCpuUs();
  await body();
  const cpuAfter = await redisCpuUs();
  const after = await commandStats(admin);
  const perCall = callsPerCycle(before.calls, after.calls, CALLS);
  // The INFO calls of this harness, and the loading of the scripts, are no script's.
  delete perCall.info;
  delete perCall.eval;
  const total = Object.values(perCall).reduce((sum, calls) => sum + calls, 0);
  const byCommand = Object.entries(perCall)
    .filter(([command]) => command !== 'evalsha')
    .sort((a, b) => b[1] - a[1])
    .map(([command, calls]) => `${command} ${Number(calls.toFixed(2))}`)
    .join(', ');
  const us = (after.evalshaUs - before.evalshaUs) / CALLS;
  const cpuUs = (cpuAfter - cpuBefore) / CALLS;
  rows.push(`| ${script} | ${total.toFixed(1)} | ${us.toFixed(0)} | ${cpuUs.toFixed(0)} | ${byCommand} |`);
}

/**
 * Measures the pool's enqueue, claim and complete, as `label` says: with one tenant, or with its
 * messages shared by two competing tenants (each tenant's use counted, docs/design.md §10).
 */
async function measurePool(label: string, tenants: readonly string[]): Promise<string> {
  const prefix = `sb-bench-${randomUUID()}`;
  const settings = benchPoolSettings(SLOTS);
  const policy = settings.pipelines[0] as (typeof settings.pipelines)[number];
  const pipelines = tenants.map((tenant, index) => ({ ...policy, id: `${policy.id}-${index}`, tenant }));
  const pool = await createRedisQueryPool({
    url: SETTINGS.redisUrl,
    prefix,
    ...settings,
    ...(tenants.length > 1 ? { pipelines } : {}),
    ...NO_RENEWAL,
  });
  /** `CALLS` messages (`extra` more), each in a session of its own, numbered from `first`. */
  const messagesFrom = (first: number, extra = 0): QueuedMessage[] =>
    Array.from({ length: CALLS + extra }, (_, offset) => {
      const index = first + offset;
      const queued = queuedMessageOf(benchMessage(index, `s${index}`));
      return tenants.length > 1 ? { ...queued, pipeline: `${policy.id}-${index % tenants.length}` } : queued;
    });
  const turns: Turn[] = [];
  await measure(`pool/enqueue${label}`, async () => {
    for (const message of messagesFrom(0)) await pool.enqueue(message);
  });
  await measure(`pool/claim${label}`, async () => {
    for (let index = 0; index < CALLS; index++) turns.push((await pool.claim()) as Turn);
  });
  await measure(`pool/complete${label}`, async () => {
    for (const turn of turns) await pool.complete(turn);
  });
  // A message's path through a running controller: its enqueue claims it, its completion looks
  // for a next turn (none waits: one message at a time).
  const claimedAhead: Turn[] = [];
  const stopClaimingAhead = pool.onClaimedAhead((turn) => claimedAhead.push(turn));
  await measure(`pool/enqueue claiming${label}`, async () => {
    for (const message of messagesFrom(CALLS)) await pool.enqueue(message);
  });
  stopClaimingAhead();
  await measure(`pool/complete claiming next, none waits${label}`, async () => {
    for (const turn of claimedAhead) await pool.complete(turn, [], { claimNext: () => {} });
  });
  // Under load: each completion claims the next waiting message.
  for (const message of messagesFrom(2 * CALLS, 1)) await pool.enqueue(message);
  let running = (await pool.claim()) as Turn;
  await measure(`pool/complete claiming next${label}`, async () => {
    for (let index = 0; index < CALLS; index++) {
      const next: Turn[] = [];
      await pool.complete(running, [], { claimNext: (turn) => next.push(turn) });
      running = next[0] as Turn;
    }
  });
  await pool.complete(running);
  await pool.shutdown();
  return prefix;
}

const poolPrefixes = [await measurePool('', ['default']), await measurePool(' (two tenants)', ['a', 'b'])];

const outboxPrefix = `sb-bench-${randomUUID()}`;
const outbox = await createRedisReplyOutbox({
  url: SETTINGS.redisUrl,
  prefix: outboxPrefix,
  leaseMs: NO_RENEWAL.leaseMs,
});
const deliveries = Array.from({ length: CALLS }, (_, index) =>
  deliveryFixture(index, { chat: `chat-${index}`, notBefore: 0 }),
);
const channel = (deliveries[0] as (typeof deliveries)[number]).channel;
const claims: DeliveryClaim[] = [];
await measure('reply-outbox/add', async () => {
  for (const delivery of deliveries) await outbox.add(delivery);
});
await measure('reply-outbox/claim', async () => {
  for (let index = 0; index < CALLS; index++)
    claims.push((await outbox.claim(channel, Date.now())) as DeliveryClaim);
});
await measure('reply-outbox/remove', async () => {
  for (const claim of claims) await outbox.delivered(claim);
});
await outbox.close();

for (const prefix of [...poolPrefixes, outboxPrefix]) await removePoolKeys(admin, prefix);
admin.disconnect();

console.log(`${CALLS} calls per script, ${new Date().toISOString()}\n`);
console.log(
  '| script | commands per call | µs in the script per call | Redis CPU µs per call | commands besides EVALSHA |',
);
console.log('| --- | --- | --- | --- | --- |');
for (const row of rows) console.log(row);
