import fc from 'fast-check';
import { expect } from 'vitest';
import {
  createController,
  createMemoryReplyOutbox,
  createOutcomeBus,
  type Outcome,
  type PipelinePolicy,
  PipelinePolicySchema,
  type Query,
  type QueryPool,
  type Reply,
  SwitchboardError,
} from '@switchboard/core';
import { queuedMessageFixture } from './store-harness.js';

/** One step of a scheduling scenario. */
export type SchedulingCommand =
  | { kind: 'arrive'; session: number; pipeline: number }
  | { kind: 'complete'; pick: number }
  | { kind: 'fail'; pick: number; retryable: boolean }
  | { kind: 'advance'; ms: number };

/** Arrivals in 5 sessions and 2 pipelines, completions, failures and the passing of time. */
export const schedulingCommand: fc.Arbitrary<SchedulingCommand> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({ kind: fc.constant('arrive' as const), session: fc.nat(4), pipeline: fc.nat(1) }),
  },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('complete' as const), pick: fc.nat() }) },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant('fail' as const), pick: fc.nat(), retryable: fc.boolean() }),
  },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 1, max: 300 }) }),
  },
);

/** The two pipelines of every scenario: one plain, one debounced; short backoff, 3 attempts. */
export const SCHEDULING_POLICIES: readonly PipelinePolicy[] = [
  PipelinePolicySchema.parse({ id: 'plain', retry: { max_attempts: 3, base_delay: 10, max_delay: 40 } }),
  PipelinePolicySchema.parse({
    id: 'merged',
    aggregation: { enabled: true, delay: '100ms', max_messages: 3 },
    retry: { max_attempts: 3, base_delay: 10, max_delay: 40 },
  }),
];

/** Where a scenario runs: pools over one store, one per replica, and the passing of time. */
export interface SchedulingWorld {
  /** One pool per controller; a local pool may appear several times (controllers sharing it). */
  pools: readonly QueryPool[];
  /** The clock the pools read (acceptance times are taken from it). */
  now(): number;
  /** Lets `ms` of time pass, running what falls due. */
  advance(ms: number): Promise<void>;
}

interface PendingRun {
  query: Query;
  resolve(): void;
  reject(error: unknown): void;
}

/** What a scenario observed, for `expectSchedulingInvariants`. */
export interface SchedulingResult {
  violations: string[];
  /** Per session, its message ids in the order their first run started. */
  firstStarts: Map<string, string[]>;
  /** Per session, its message ids in acceptance order. */
  arrivals: Map<string, string[]>;
  outcomes: Outcome[];
  sent: number;
  /** Whether everything ended: nothing pending, running or in flight. */
  drained: boolean;
}

/**
 * Runs `commands` against one controller per pool of `world` (docs/design.md §2 "Controller"): every pipeline
 * run, on whichever controller, checks the global limit and the session slot across all of them.
 * At the end, what still runs is answered until everything has ended.
 */
export async function simulateScheduling(
  world: SchedulingWorld,
  globalLimit: number,
  commands: readonly SchedulingCommand[],
): Promise<SchedulingResult> {
  const policies = SCHEDULING_POLICIES;
  const violations: string[] = [];
  const running: PendingRun[] = [];
  const activeBySession = new Map<string, number>();
  const firstStarts = new Map<string, string[]>();
  const arrivals = new Map<string, string[]>();
  const outcomes: Outcome[] = [];
  const bus = createOutcomeBus();
  bus.subscribe((outcome) => outcomes.push(outcome));

  const pipeline = (id: string) => ({
    id,
    run(query: Query) {
      const active = (activeBySession.get(query.session) ?? 0) + 1;
      activeBySession.set(query.session, active);
      if (active > 1) violations.push(`two turns in flight in ${query.session}`);
      if (running.length + 1 > globalLimit)
        violations.push(`${running.length + 1} turns in flight > ${globalLimit}`);
      const maxAttempts = policies.find((policy) => policy.id === id)?.retry.maxAttempts ?? 0;
      if (query.attempt > maxAttempts)
        violations.push(`attempt ${query.attempt} of ${query.id} > ${maxAttempts}`);
      const started = firstStarts.get(query.session) ?? [];
      for (const m of query.messages) if (!started.includes(m.id)) started.push(m.id);
      firstStarts.set(query.session, started);
      return new Promise<{ replies: Reply[] }>((resolve, reject) => {
        const done = () => {
          activeBySession.set(query.session, (activeBySession.get(query.session) ?? 1) - 1);
          running.splice(running.indexOf(run), 1);
        };
        const run: PendingRun = {
          query,
          resolve: () => {
            done();
            resolve({ replies: [] });
          },
          reject: (error) => {
            done();
            reject(error);
          },
        };
        running.push(run);
      });
    },
  });

  const controllers = world.pools.map((pool) =>
    createController({
      pool,
      pipelines: new Map(policies.map((p) => [p.id, pipeline(p.id)])),
      policies: new Map(policies.map((p) => [p.id, p])),
      outcomes: bus,
      // Runs answer without replies: nothing reaches the outbox, messages complete with their turn.
      outbox: createMemoryReplyOutbox(),
      now: world.now,
    }),
  );
  for (const controller of controllers) controller.start();

  let sent = 0;
  for (const step of commands) {
    if (step.kind === 'arrive') {
      sent += 1;
      const chat = `S${step.session}`;
      const session = `test:c:person:${chat}`;
      const queued = queuedMessageFixture(sent, {
        session,
        pipeline: policies[step.pipeline]?.id ?? 'plain',
        routedByRule: false,
        attempt: 0,
        acceptedAt: world.now(),
      });
      queued.message.chat = { type: 'person', id: chat };
      queued.message.sender = { id: `user-${chat}`, is_bot: false };
      arrivals.set(session, [...(arrivals.get(session) ?? []), queued.message.id]);
      const pool = world.pools[sent % world.pools.length] as QueryPool;
      await pool.enqueue(queued);
    } else if (step.kind === 'advance') {
      await world.advance(step.ms);
    } else if (running.length > 0) {
      const run = running[step.pick % running.length] as PendingRun;
      if (step.kind === 'complete') run.resolve();
      else run.reject(new SwitchboardError('SB_PIPELINE_FAILED', { retryable: step.retryable }));
    }
    await world.advance(0);
  }
  // Finish everything that is left: answer what runs, let backoff and debounce fall due.
  const pool = world.pools[0] as QueryPool;
  let drained = false;
  for (let round = 0; round < 2000 && !drained; round++) {
    const stats = await pool.stats();
    drained = stats.pending === 0 && stats.inflight === 0 && stats.sessions === 0 && running.length === 0;
    for (const run of [...running]) run.resolve();
    if (!drained) await world.advance(50);
  }
  for (const controller of controllers) await controller.stop({ drainTimeoutMs: 0 });
  return { violations, firstStarts, arrivals, outcomes, sent, drained };
}

/**
 * The invariants of docs/design.md §2: limits never exceeded, messages of a session started in
 * acceptance order, exactly one outcome per message, no message run past its attempts.
 */
export function expectSchedulingInvariants(result: SchedulingResult): void {
  expect(result.violations).toEqual([]);
  expect(result.drained).toBe(true);
  for (const [session, order] of result.arrivals) {
    expect(result.firstStarts.get(session) ?? []).toEqual(order);
  }
  const perMessage = new Map<string, number>();
  for (const outcome of result.outcomes) {
    perMessage.set(outcome.message.id, (perMessage.get(outcome.message.id) ?? 0) + 1);
  }
  expect(perMessage.size).toBe(result.sent);
  expect([...perMessage.entries()].filter(([, count]) => count !== 1)).toEqual([]);
  const maxAttempts = Math.max(...SCHEDULING_POLICIES.map((policy) => policy.retry.maxAttempts));
  expect(result.outcomes.filter((outcome) => (outcome.attempt ?? 0) > maxAttempts)).toEqual([]);
}
