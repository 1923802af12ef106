import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  type Outcome,
  type Query,
  type Reply,
  SwitchboardError,
  createController,
  createMemoryQueryPool,
  createOutcomeBus,
  PipelinePolicySchema,
} from '../src/index.js';
import { message } from './harness.js';

type Command =
  | { kind: 'arrive'; session: number; pipeline: number }
  | { kind: 'complete'; pick: number }
  | { kind: 'fail'; pick: number; retryable: boolean }
  | { kind: 'advance'; ms: number };

const command: fc.Arbitrary<Command> = fc.oneof(
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

interface Run {
  query: Query;
  resolve(result: { replies: Reply[] }): void;
  reject(error: unknown): void;
}

async function simulate(globalLimit: number, commands: Command[]) {
  const policies = [
    PipelinePolicySchema.parse({ id: 'plain', retry: { max_attempts: 3, base_delay: 10, max_delay: 40 } }),
    PipelinePolicySchema.parse({
      id: 'merged',
      aggregation: { enabled: true, delay: '100ms', max_messages: 3 },
      retry: { max_attempts: 3, base_delay: 10, max_delay: 40 },
    }),
  ];
  const pool = createMemoryQueryPool({
    concurrency: { global: globalLimit, perSession: 1 },
    limits: { maxPending: 10_000, maxPendingPerSession: 500 },
    pipelines: policies,
  });
  const violations: string[] = [];
  const running: Run[] = [];
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
      const started = firstStarts.get(query.session) ?? [];
      for (const m of query.messages) if (!started.includes(m.id)) started.push(m.id);
      firstStarts.set(query.session, started);
      return new Promise<{ replies: Reply[] }>((resolve, reject) => {
        const done = () => {
          activeBySession.set(query.session, (activeBySession.get(query.session) ?? 1) - 1);
          running.splice(running.indexOf(run), 1);
        };
        const run: Run = {
          query,
          resolve: (result) => {
            done();
            resolve(result);
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

  const controller = createController({
    pool,
    pipelines: new Map(policies.map((p) => [p.id, pipeline(p.id)])),
    policies: new Map(policies.map((p) => [p.id, p])),
    outcomes: bus,
    deliver: async () => {},
  });
  controller.start();

  let sent = 0;
  for (const step of commands) {
    if (step.kind === 'arrive') {
      const chat = `S${step.session}`;
      const inbound = message(chat, `m${sent++}`);
      const session = `test:c:person:${chat}`;
      arrivals.set(session, [...(arrivals.get(session) ?? []), inbound.id]);
      await pool.enqueue({
        message: inbound,
        session,
        pipeline: policies[step.pipeline]?.id ?? 'plain',
        routedByRule: false,
        attempt: 0,
        acceptedAt: Date.now(),
      });
    } else if (step.kind === 'advance') {
      await vi.advanceTimersByTimeAsync(step.ms);
    } else if (running.length > 0) {
      const run = running[step.pick % running.length] as Run;
      if (step.kind === 'complete') run.resolve({ replies: [] });
      else run.reject(new SwitchboardError('SB_PIPELINE_FAILED', { retryable: step.retryable }));
    }
    await vi.advanceTimersByTimeAsync(0);
  }
  // Finish everything that is left.
  for (let guard = 0; guard < 10_000; guard++) {
    const stats = await pool.stats();
    if (stats.pending === 0 && stats.inflight === 0 && running.length === 0) break;
    for (const run of [...running]) run.resolve({ replies: [] });
    await vi.advanceTimersByTimeAsync(50);
  }
  return { violations, firstStarts, arrivals, outcomes, sent, stats: await pool.stats() };
}

describe('scheduling (property)', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('keeps the limits, per-session order and exactly one outcome per message under any interleaving', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 3 }),
        fc.array(command, { maxLength: 60 }),
        async (limit, commands) => {
          const result = await simulate(limit, commands);
          expect(result.violations).toEqual([]);
          for (const [session, order] of result.arrivals) {
            expect(result.firstStarts.get(session) ?? []).toEqual(order);
          }
          const perMessage = new Map<string, number>();
          for (const outcome of result.outcomes) {
            perMessage.set(outcome.message.id, (perMessage.get(outcome.message.id) ?? 0) + 1);
          }
          expect(perMessage.size).toBe(result.sent);
          expect([...perMessage.values()].every((count) => count === 1)).toBe(true);
          expect(result.stats).toMatchObject({ pending: 0, inflight: 0, sessions: 0 });
        },
      ),
      { numRuns: 150 },
    );
  });
});
