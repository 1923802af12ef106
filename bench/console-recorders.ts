/**
 * What the console's per-message recorders cost, in process: the message trail, the outcome
 * rate, the turn latency rings and the route hit counts, fed for each message exactly what the
 * gateway feeds them for a completed echo turn (a route, a turn start, its end, the outcome),
 * against the same loop with the bare router and no recorder. The HTTP throughput bench cannot
 * see a cost this small through the noise of a shared machine; this measures it directly, in
 * ns of CPU and bytes allocated per message, to set beside the gateway's CPU per request.
 *
 * Inputs are built up front: 10,000 distinct messages cycled, so with the trail's bound of 1,000
 * every message is new to it and each one evicts the oldest, as under sustained load. Time: the
 * least CPU of SETTINGS.schedulerRuns (at least 5) runs of 200,000 messages per variant, the
 * variants taken in turn. Allocation: V8's sampling heap profiler over 200,000 messages, objects
 * collected by either GC included.
 */
import type { HeapProfiler } from 'node:inspector';
import { Session } from 'node:inspector/promises';
import {
  type Outcome,
  type RouteDecision,
  type Router,
  type Turn,
  parseInboundMessage,
} from '@switchboard/core';
import { createMessageTrail } from '../apps/gateway/src/admin/message-trail.js';
import { createOutcomeRate } from '../apps/gateway/src/admin/outcome-rate.js';
import { createRouteHits } from '../apps/gateway/src/admin/route-hits.js';
import { createTurnLatency } from '../apps/gateway/src/admin/turn-latency.js';
import { type Measurement, formatNumber, progress, runScenario } from './support/report.js';
import { SETTINGS, collectGarbage } from './support/settings.js';

const DISTINCT_MESSAGES = 10_000;
const MESSAGES_PER_RUN = 200_000;
const SAMPLING_INTERVAL_BYTES = 256;

interface Input {
  turn: Turn;
  outcome: Outcome;
}

function buildInputs(): Input[] {
  const at = Date.now();
  return Array.from({ length: DISTINCT_MESSAGES }, (_, index) => {
    const message = parseInboundMessage({
      id: `01JBENCH${String(index).padStart(18, '0')}`,
      platform: 'http',
      channel: 'api',
      chat: { type: 'person', id: `bench-${index}` },
      sender: { id: 'bench-user' },
      text: 'hello',
      platform_message_id: String(index),
      received_at: at,
    });
    const session = `http:api:person:bench-${index}`;
    const turn: Turn = {
      id: `turn-${index}`,
      session,
      pipeline: 'echo',
      messages: [{ message, session, pipeline: 'echo', routedByRule: false, attempt: 1, acceptedAt: at }],
      attempt: 1,
      lease: { token: `t-${index}`, expiresAt: null },
    };
    const outcome: Outcome = {
      kind: 'completed',
      at,
      message,
      session,
      pipeline: 'echo',
      turnId: turn.id,
      attempt: 1,
      replies: [{ text: 'hello' }],
    };
    return { turn, outcome };
  });
}

const DECISION: RouteDecision = { pipeline: 'echo', rule: null, routedByRule: false };
const bareRouter: Router = { route: () => DECISION, explain: () => ({}) as ReturnType<Router['explain']> };

/** Feeds one message to what a variant records; returns something so the loop is not dead code. */
type Feed = (input: Input) => unknown;

/** The variants: no recorder, each recorder alone, and all four as the gateway wires them. */
function variants(): Record<string, Feed> {
  const trail = createMessageTrail({ storeText: 'full', recordIgnored: false });
  const rate = createOutcomeRate();
  const latency = createTurnLatency();
  const counted = createRouteHits().counting(bareRouter);
  const all = {
    trail: createMessageTrail({ storeText: 'full', recordIgnored: false }),
    rate: createOutcomeRate(),
    latency: createTurnLatency(),
    router: createRouteHits().counting(bareRouter),
  };
  return {
    none: ({ outcome }) => bareRouter.route(outcome.message),
    'route hits': ({ outcome }) => counted.route(outcome.message),
    'message trail': ({ turn, outcome }) => {
      bareRouter.route(outcome.message);
      trail.observer.turnStarted(turn);
      trail.observer.turnEnded(turn, 'completed', 1.5);
      trail.recordOutcome(outcome);
    },
    'outcome rate': ({ outcome }) => {
      bareRouter.route(outcome.message);
      rate.record(outcome);
    },
    'turn latency': ({ turn, outcome }) => {
      bareRouter.route(outcome.message);
      latency.turnEnded(turn, 'completed', 1.5);
    },
    'all four': ({ turn, outcome }) => {
      all.router.route(outcome.message);
      all.trail.observer.turnStarted(turn);
      all.trail.observer.turnEnded(turn, 'completed', 1.5);
      all.latency.turnEnded(turn, 'completed', 1.5);
      all.trail.recordOutcome(outcome);
      all.rate.record(outcome);
    },
  };
}

/**
 * ns of CPU (user + system, the GC's threads included) per message of `feed` over
 * MESSAGES_PER_RUN messages: CPU time, not wall time, since other processes take turns on the
 * cores of a shared machine.
 */
function timeRun(feed: Feed, inputs: readonly Input[]): number {
  let sink = 0;
  const before = process.cpuUsage();
  for (let i = 0; i < MESSAGES_PER_RUN; i++) {
    if (feed(inputs[i % DISTINCT_MESSAGES] as Input) === sink) sink += 1;
  }
  const used = process.cpuUsage(before);
  if (sink < 0) progress('unreachable');
  return ((used.user + used.system) * 1000) / MESSAGES_PER_RUN;
}

/** Bytes allocated under `node` of a sampling heap profile, its children included. */
function selfSizes(node: HeapProfiler.SamplingHeapProfileNode): number {
  let total = node.selfSize;
  for (const child of node.children) total += selfSizes(child);
  return total;
}

/** Bytes allocated per message by `feed`, garbage included. */
async function allocatedBytes(feed: Feed, inputs: readonly Input[]): Promise<number> {
  const session = new Session();
  session.connect();
  try {
    collectGarbage();
    await session.post('HeapProfiler.startSampling', {
      samplingInterval: SAMPLING_INTERVAL_BYTES,
      includeObjectsCollectedByMajorGC: true,
      includeObjectsCollectedByMinorGC: true,
    });
    for (let i = 0; i < MESSAGES_PER_RUN; i++) feed(inputs[i % DISTINCT_MESSAGES] as Input);
    const { profile } = await session.post('HeapProfiler.stopSampling');
    return selfSizes(profile.head) / MESSAGES_PER_RUN;
  } finally {
    session.disconnect();
  }
}

await runScenario('console-recorders', async () => {
  const inputs = buildInputs();
  const feeds = variants();
  const names = Object.keys(feeds);
  const runs = Math.max(5, SETTINGS.schedulerRuns);
  const timings = new Map<string, number[]>(names.map((name) => [name, []]));
  // One untimed pass each warms the code and fills the trail to its bound.
  for (const name of names) timeRun(feeds[name] as Feed, inputs);
  for (let run = 0; run < runs; run++) {
    for (const name of names) {
      collectGarbage();
      timings.get(name)?.push(timeRun(feeds[name] as Feed, inputs));
    }
  }
  const fastest = (name: string) => Math.min(...(timings.get(name) ?? [Number.NaN]));
  const baselineNs = fastest('none');
  const baselineBytes = await allocatedBytes(feeds.none as Feed, inputs);
  const measurements: Measurement[] = [];
  const details: Record<string, unknown> = { runs: Object.fromEntries(timings) };
  for (const name of names) {
    if (name === 'none') continue;
    const addedNs = fastest(name) - baselineNs;
    const addedBytes = (await allocatedBytes(feeds[name] as Feed, inputs)) - baselineBytes;
    progress(`${name}: +${formatNumber(addedNs)} ns, +${formatNumber(addedBytes)} B per message`);
    measurements.push(
      { metric: `${name} · CPU per message`, value: addedNs, unit: 'ns' },
      { metric: `${name} · allocated per message`, value: addedBytes, unit: 'B' },
    );
  }
  collectGarbage(2);
  details.heapUsedMB = process.memoryUsage().heapUsed / 1e6;
  return { measurements, targets: [], details };
});
