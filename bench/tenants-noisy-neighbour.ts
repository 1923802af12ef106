/**
 * A noisy neighbour, in process: Switchboard's memory pool and controller wired as the gateway
 * wires them, two tenants sharing `concurrency.pipeline: 8`. Tenant A's pipeline takes
 * SETTINGS.noisySlowMs per turn and A offers 50× what it can run (its share: its own
 * `concurrency` of 6 turns at a time), each message in a session of its own, so its backlog grows
 * for the whole run; tenant B sends SETTINGS.noisyRatePerS messages/s at a steady pace to a
 * pipeline of SETTINGS.noisyQuickMs turns (at the defaults B needs one slot on average, more in
 * its bursts, so it competes for the 2 that A's cap leaves). B's queue wait (from enqueue to its pipeline's start,
 * `performance.now()`) is measured with B alone, then beside A with A's concurrency capped (the
 * configuration the target is about), beside A with weights only (A uncapped: B waits for one of
 * A's slow turns to end), and beside A without tenants (one tenant: oldest head first, as before
 * tenants). The setups alternate over SETTINGS.noisyRounds rounds; each setup's median p99
 * (and p50) over the rounds counts.
 */
import {
  type Pipeline,
  type PipelinePolicy,
  PipelinePolicySchema,
  type QueuedMessage,
  type TenantShare,
  createController,
  createMemoryQueryPool,
  createOutcomeBus,
  defaultTenantShare,
  parseInboundMessage,
} from '@switchboard/core';
import { instantDelivery } from '@switchboard/contracts';
import { type Measurement, type TargetCheck, formatNumber, progress, runScenario } from './support/report.js';
import { SETTINGS } from './support/settings.js';
import { median, summarize } from './support/stats.js';

const GLOBAL = 8;
const A_CONCURRENCY = 6;
/** How much more than its share tenant A offers. */
const OVERLOAD = 50;

type Setup = 'B alone' | 'beside A, A capped' | 'beside A, weights only' | 'beside A, no tenants';
const SETUPS: readonly Setup[] = [
  'B alone',
  'beside A, A capped',
  'beside A, weights only',
  'beside A, no tenants',
];

const policy = (id: string): PipelinePolicy => PipelinePolicySchema.parse({ id });

let counter = 0;
function queued(pipeline: string): QueuedMessage {
  counter += 1;
  const id = `01BENCH${String(counter).padStart(19, '0')}`;
  return {
    message: parseInboundMessage({
      id,
      platform: 'bench',
      channel: pipeline,
      chat: { type: 'person', id: `c${counter}` },
      sender: { id: `u${counter}` },
      text: 'hi',
      platform_message_id: id,
      received_at: Date.now(),
    }),
    session: `bench:${pipeline}:person:c${counter}`,
    pipeline,
    routedByRule: false,
    attempt: 0,
    acceptedAt: Date.now(),
  };
}

/** Runs one setup for SETTINGS.noisyDurationS seconds; resolves B's queue waits, ms. */
async function run(setup: Setup): Promise<number[]> {
  const tenants = setup !== 'beside A, no tenants';
  const shares: TenantShare[] =
    setup === 'beside A, A capped' || setup === 'B alone'
      ? [{ ...defaultTenantShare('a'), maxConcurrency: A_CONCURRENCY }]
      : [];
  const pool = createMemoryQueryPool({
    concurrency: { global: GLOBAL, perSession: 1 },
    limits: { maxPending: Number.MAX_SAFE_INTEGER, maxPendingPerSession: Number.MAX_SAFE_INTEGER },
    pipelines: [
      { ...policy('a-bot'), tenant: tenants ? 'a' : undefined },
      { ...policy('b-bot'), tenant: tenants ? 'b' : undefined },
    ],
    tenants: shares,
  });
  const enqueuedAt = new Map<string, number>();
  const waits: number[] = [];
  const slow = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  const pipelines: Map<string, Pipeline> = new Map([
    [
      'a-bot',
      {
        id: 'a-bot',
        async run() {
          await slow(SETTINGS.noisySlowMs);
          return { replies: [] };
        },
      },
    ],
    [
      'b-bot',
      {
        id: 'b-bot',
        async run(query) {
          const at = enqueuedAt.get(query.message.id);
          if (at !== undefined) waits.push(performance.now() - at);
          await slow(SETTINGS.noisyQuickMs);
          return { replies: [] };
        },
      },
    ],
  ]);
  const outcomes = createOutcomeBus();
  const sending = instantDelivery(outcomes);
  const controller = createController({
    pool,
    pipelines,
    policies: new Map([
      ['a-bot', policy('a-bot')],
      ['b-bot', policy('b-bot')],
    ]),
    outcomes,
    outbox: sending.outbox,
  });
  controller.start();

  const timers: NodeJS.Timeout[] = [];
  if (setup !== 'B alone') {
    // A's share is A_CONCURRENCY turns per SETTINGS.noisySlowMs; it offers OVERLOAD times that,
    // in a burst every 10 ms.
    const perTick = Math.ceil((OVERLOAD * A_CONCURRENCY * 10) / SETTINGS.noisySlowMs);
    timers.push(
      setInterval(() => {
        for (let i = 0; i < perTick; i++) void pool.enqueue(queued('a-bot'));
      }, 10),
    );
  }
  timers.push(
    setInterval(() => {
      const message = queued('b-bot');
      enqueuedAt.set(message.message.id, performance.now());
      void pool.enqueue(message);
    }, 1000 / SETTINGS.noisyRatePerS),
  );
  await slow(SETTINGS.noisyDurationS * 1000);
  for (const timer of timers) clearInterval(timer);
  // What A left waiting is taken out, so that the stop does not wait for its backlog.
  await pool.takeAll();
  await controller.stop({ drainTimeoutMs: 2 * SETTINGS.noisySlowMs });
  await sending.stop();
  return waits;
}

await runScenario('tenants-noisy-neighbour', async () => {
  const rounds = new Map<Setup, Array<ReturnType<typeof summarize>>>(SETUPS.map((setup) => [setup, []]));
  for (let round = 0; round < SETTINGS.noisyRounds; round++) {
    for (const setup of SETUPS) {
      const waits = summarize(await run(setup));
      progress(
        `round ${round + 1} · ${setup}: B queue wait p50 ${formatNumber(waits.p50)} ms, p99 ${formatNumber(waits.p99)} ms (${waits.count} messages)`,
      );
      rounds.get(setup)?.push(waits);
    }
  }
  const figures = (setup: Setup) => {
    const runs = rounds.get(setup) ?? [];
    return { p50: median(runs.map((r) => r.p50)), p99: median(runs.map((r) => r.p99)) };
  };
  const measurements: Measurement[] = SETUPS.flatMap((setup) => [
    { metric: `B's queue wait · ${setup} · p50`, value: figures(setup).p50, unit: 'ms' },
    { metric: `B's queue wait · ${setup} · p99`, value: figures(setup).p99, unit: 'ms' },
  ]);
  const alone = figures('B alone').p99;
  const capped = figures('beside A, A capped').p99;
  const targets: TargetCheck[] = [
    {
      target: `B's queue wait p99 beside A offering ${OVERLOAD}× its share ÷ B alone`,
      expected: '≤ 1.1×',
      actual: `${formatNumber(capped / alone)}× (${formatNumber(capped)} / ${formatNumber(alone)} ms)`,
      pass: capped <= 1.1 * alone,
    },
  ];
  return { measurements, targets, details: Object.fromEntries(rounds) };
});
