/**
 * What the SQLite reply outbox costs per delivery: deliveries of 50 chats are added (not timed),
 * then drained as the reply sender drains them — claims until 64 are held (the default
 * `outbound.concurrency`) or none is due, settles them all with `delivered` in one tick (one
 * group commit), claims again. Two shapes: bursts of one delivery per chat (a reply each for 50
 * sessions speaking at once, the whole-path benchmark's load), and a backlog of 40 deliveries per
 * chat (2,000 pending, as after a platform outage), where a claim's cost shows whether it grows
 * with the rows pending. Figures: wall µs per delivery from the first claim to the last
 * settlement, and the µs of those spent in `claim`; the fastest of SETTINGS.schedulerRuns (at
 * least 3) runs. The file lives in the temporary folder, in WAL mode as the gateway opens it.
 *
 * `BENCH_OUTBOX_STORE` names another build of the store to load instead (the path of its
 * `dist/index.js`), so that one build can be measured beside another on the same machine.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Delivery, DeliveryClaim, ReplyOutbox } from '@switchboard/core';
import { type Measurement, progress, runScenario } from './support/report.js';
import { SETTINGS } from './support/settings.js';

type StoreModule = typeof import('../packages/store-sqlite/src/index.js');

/** This checkout's build (`npm run bench` builds first), unless another is named. */
const STORE_MODULE =
  SETTINGS.outboxStore || new URL('../packages/store-sqlite/dist/index.js', import.meta.url).href;
const CHANNEL = 'api';
const CHATS = 50;
/** The config's default `outbound.concurrency`. */
const SENDER_CONCURRENCY = 64;
const BURSTS_PER_RUN = SETTINGS.quick ? 20 : 100;
const BACKLOG_PER_CHAT = 40;
const RUNS = Math.max(3, SETTINGS.schedulerRuns);

let deliveries = 0;

/** A delivery shaped like an `openai` pipeline's answer to an HTTP message. */
function benchDelivery(chat: number): Delivery {
  const index = deliveries++;
  const session = `http:${CHANNEL}:person:bench-${chat}`;
  const origin = {
    id: `01JBENCH${String(index).padStart(18, '0')}`,
    platform: 'http',
    channel: CHANNEL,
    chat: { type: 'person', id: `bench-${chat}` },
    sender: { id: `user-${chat}` },
    text: 'What is the status of my order?',
    platform_message_id: String(index),
    received_at: new Date().toISOString(),
  } as unknown as Delivery['origin'];
  return {
    id: `01JOUT${String(index).padStart(20, '0')}`,
    channel: CHANNEL,
    chat: session,
    origin,
    messages: [{ message: origin, session, pipeline: 'assistant', rule: 'default', attempt: 1 }],
    turnId: `turn-${index}`,
    replies: [{ text: 'Your order left the warehouse this morning and should arrive within two days.' }],
    ownsOutcome: true,
    createdAt: Date.now(),
    attempts: 0,
    notBefore: 0,
  };
}

/** Drains `outbox` as the reply sender does; `expected` deliveries must come out. */
async function drain(outbox: ReplyOutbox, expected: number): Promise<{ totalMs: number; claimMs: number }> {
  let claimMs = 0;
  let drained = 0;
  const startedAt = performance.now();
  for (;;) {
    const held: DeliveryClaim[] = [];
    while (held.length < SENDER_CONCURRENCY) {
      const claimedAt = performance.now();
      const claim = await outbox.claim(CHANNEL, Date.now());
      claimMs += performance.now() - claimedAt;
      if (claim === null) break;
      held.push(claim);
    }
    if (held.length === 0) break;
    await Promise.all(held.map((claim) => outbox.delivered(claim)));
    drained += held.length;
  }
  const totalMs = performance.now() - startedAt;
  if (drained !== expected) throw new Error(`drained ${drained} of ${expected} deliveries`);
  return { totalMs, claimMs };
}

async function fill(outbox: ReplyOutbox, perChat: number): Promise<number> {
  const adds: Promise<unknown>[] = [];
  for (let round = 0; round < perChat; round++) {
    for (let chat = 0; chat < CHATS; chat++) adds.push(outbox.add(benchDelivery(chat)));
  }
  await Promise.all(adds);
  return adds.length;
}

/** µs per delivery, wall and in claims, of `bursts` fills of `perChat` deliveries per chat. */
async function measure(
  createSqliteStore: StoreModule['createSqliteStore'],
  perChat: number,
  bursts: number,
): Promise<{ totalUs: number; claimUs: number }> {
  const folder = mkdtempSync(join(tmpdir(), 'switchboard-outbox-bench-'));
  const store = createSqliteStore({ path: join(folder, 'switchboard.db') });
  try {
    let totalMs = 0;
    let claimMs = 0;
    let count = 0;
    for (let burst = 0; burst < bursts; burst++) {
      const added = await fill(store.outbox, perChat);
      const run = await drain(store.outbox, added);
      totalMs += run.totalMs;
      claimMs += run.claimMs;
      count += added;
    }
    return { totalUs: (totalMs * 1000) / count, claimUs: (claimMs * 1000) / count };
  } finally {
    store.close();
    rmSync(folder, { recursive: true, force: true });
  }
}

await runScenario('outbox-drain', async () => {
  const { createSqliteStore } = (await import(STORE_MODULE)) as StoreModule;
  await measure(createSqliteStore, 1, BURSTS_PER_RUN);
  const shapes = [
    { name: `burst · ${CHATS} chats × 1`, perChat: 1, bursts: BURSTS_PER_RUN },
    { name: `backlog · ${CHATS} chats × ${BACKLOG_PER_CHAT}`, perChat: BACKLOG_PER_CHAT, bursts: 1 },
  ];
  const best = new Map<string, { totalUs: number; claimUs: number }>();
  for (let run = 0; run < RUNS; run++) {
    for (const shape of shapes) {
      const figures = await measure(createSqliteStore, shape.perChat, shape.bursts);
      progress(
        `${shape.name} · run ${run + 1}: ${figures.totalUs.toFixed(1)} µs/delivery, ${figures.claimUs.toFixed(1)} in claim`,
      );
      const fastest = best.get(shape.name);
      if (fastest === undefined || figures.totalUs < fastest.totalUs) best.set(shape.name, figures);
    }
  }
  const measurements: Measurement[] = [...best].flatMap(([name, figures]) => [
    { metric: `${name} · claim + delivered`, value: figures.totalUs, unit: 'µs/delivery' },
    { metric: `${name} · of which claim`, value: figures.claimUs, unit: 'µs/delivery' },
  ]);
  return {
    measurements,
    targets: [],
    details: { store: STORE_MODULE, runs: RUNS, best: Object.fromEntries(best) },
  };
});
