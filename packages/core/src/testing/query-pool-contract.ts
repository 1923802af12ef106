import { afterEach, describe, expect, it } from 'vitest';
import type { Concurrency, PipelinePolicyInput, QueueLimits } from '../pipeline-policy.js';
import { PipelinePolicySchema } from '../pipeline-policy.js';
import type { QueryPool, QueuedMessage, Turn } from '../ports/query-pool.js';
import type { StoreHarness } from './store-harness.js';
import { queuedMessageFixture } from './store-harness.js';

/** What a pool factory is asked for by one contract test. */
export interface QueryPoolFactoryContext {
  /** The suite's clock; the pool must read time through it. */
  now(): number;
  concurrency: Concurrency;
  limits: QueueLimits;
  pipelines: ReturnType<typeof PipelinePolicySchema.parse>[];
}

export type QueryPoolFactory = (context: QueryPoolFactoryContext) => Promise<StoreHarness<QueryPool>>;

const CLOCK_START_MS = Date.UTC(2025, 0, 1);

/**
 * The contract of `QueryPool` (docs/design.md §2 "Query pool"): every implementation — in memory,
 * journaled, Redis — runs it. Time is the suite's clock, so debounce and backoff are checked
 * without waiting.
 */
export function queryPoolContract(name: string, factory: QueryPoolFactory): void {
  describe(`${name} (QueryPool contract)`, () => {
    let nowMs = CLOCK_START_MS;
    const open: Array<StoreHarness<QueryPool>> = [];
    afterEach(async () => {
      for (const harness of open.splice(0)) await harness.close();
      nowMs = CLOCK_START_MS;
    });

    async function pool(
      options: {
        global?: number;
        perSession?: number;
        maxPending?: number;
        perSessionCap?: number;
        pipelines?: PipelinePolicyInput[];
      } = {},
    ): Promise<QueryPool> {
      const harness = await factory({
        now: () => nowMs,
        concurrency: { global: options.global ?? 20, perSession: options.perSession ?? 1 },
        limits: {
          maxPending: options.maxPending ?? 10_000,
          maxPendingPerSession: options.perSessionCap ?? 500,
        },
        pipelines: (options.pipelines ?? [{ id: 'p' }, { id: 'q' }]).map((input) =>
          PipelinePolicySchema.parse(input),
        ),
      });
      open.push(harness);
      return harness.store;
    }

    let sequence = 0;
    /** Counts the pool's wake-ups from now on. */
    function countWakeups(p: QueryPool): () => number {
      let wakeups = 0;
      p.onRunnable(() => {
        wakeups += 1;
      });
      return () => wakeups;
    }

    function queued(session: string, extra: Partial<QueuedMessage> = {}): QueuedMessage {
      sequence += 1;
      const base = queuedMessageFixture(sequence);
      // One sender per session, so that debounce may merge a session's messages.
      base.message.sender = { id: `sender-${session}`, is_bot: false };
      return { ...base, session, pipeline: 'p', attempt: 0, acceptedAt: nowMs, ...extra };
    }
    const texts = (turn: Turn | null) => turn?.messages.map((m) => m.message.id) ?? null;

    describe('when empty', () => {
      it('claims nothing and reports no state', async () => {
        const p = await pool();
        expect(await p.claim()).toBeNull();
        expect(await p.stats()).toMatchObject({ pending: 0, inflight: 0, sessions: 0 });
      });
    });

    describe('when one session has several messages', () => {
      it('runs them one at a time in acceptance order, counting attempts', async () => {
        const p = await pool();
        const a = queued('A');
        const b = queued('A');
        await p.enqueue(a);
        await p.enqueue(b);
        const first = await p.claim();
        expect(texts(first)).toEqual([a.message.id]);
        expect(first?.attempt).toBe(1);
        expect(await p.claim()).toBeNull();
        await p.complete(first as Turn);
        expect(texts(await p.claim())).toEqual([b.message.id]);
      });
    });

    describe('when several sessions wait', () => {
      it('hands out the session whose head is oldest first', async () => {
        const p = await pool();
        const order = ['S3', 'S1', 'S2'].map((session) => queued(session));
        for (const message of order) await p.enqueue(message);
        const claimed = [await p.claim(), await p.claim(), await p.claim()];
        expect(claimed.map((turn) => turn?.session)).toEqual(['S3', 'S1', 'S2']);
      });

      it('never exceeds the global limit, and frees the slot on complete', async () => {
        const p = await pool({ global: 2 });
        for (const session of ['A', 'B', 'C']) await p.enqueue(queued(session));
        const first = (await p.claim()) as Turn;
        expect(await p.claim()).not.toBeNull();
        expect(await p.claim()).toBeNull();
        expect((await p.stats()).inflight).toBe(2);
        await p.complete(first);
        expect((await p.claim())?.session).toBe('C');
      });

      it('keeps a pipeline within its max_concurrency while others run', async () => {
        const p = await pool({ pipelines: [{ id: 'p', max_concurrency: 1 }, { id: 'q' }] });
        await p.enqueue(queued('A'));
        await p.enqueue(queued('B'));
        await p.enqueue(queued('C', { pipeline: 'q' }));
        expect((await p.claim())?.session).toBe('A');
        // B waits for pipeline p; C (pipeline q) may run.
        expect((await p.claim())?.session).toBe('C');
        expect(await p.claim()).toBeNull();
      });
    });

    describe('when the turn handed back is a copy of the claimed one', () => {
      it('frees its slot all the same, as after a round trip through JSON', async () => {
        const p = await pool();
        const a = queued('A');
        const b = queued('A');
        await p.enqueue(a);
        await p.enqueue(b);
        const first = (await p.claim()) as Turn;
        await p.complete(JSON.parse(JSON.stringify(first)) as Turn);
        expect((await p.stats()).inflight).toBe(0);
        expect(texts(await p.claim())).toEqual([b.message.id]);
      });
    });

    describe('when a turn is retried', () => {
      it('puts it back at the head, runnable only at retryAt, ahead of later messages', async () => {
        const p = await pool();
        const head = queued('A');
        const later = queued('A');
        await p.enqueue(head);
        await p.enqueue(later);
        const turn = (await p.claim()) as Turn;
        await p.retry(turn, nowMs + 5000);
        expect(await p.claim()).toBeNull();
        nowMs += 5000;
        const again = await p.claim();
        expect(texts(again)).toEqual([head.message.id]);
        expect(again?.attempt).toBe(2);
      });

      it('claims the same messages again under the same turn id, for backends to deduplicate on', async () => {
        const p = await pool();
        await p.enqueue(queued('A'));
        const turn = (await p.claim()) as Turn;
        await p.retry(turn, nowMs);
        expect((await p.claim())?.id).toBe(turn.id);
      });

      it('counts attempts per message when a later message joins the retried burst', async () => {
        const p = await pool({ pipelines: [{ id: 'p', busy_mode: 'collect' }] });
        const head = queued('A');
        const joining = queued('A');
        await p.enqueue(head);
        const turn = (await p.claim()) as Turn;
        await p.enqueue(joining);
        await p.retry(turn, nowMs + 5000);
        nowMs += 5000;
        const merged = (await p.claim()) as Turn;
        expect(merged.messages.map((m) => [m.message.id, m.attempt])).toEqual([
          [head.message.id, 2],
          [joining.message.id, 1],
        ]);
        expect(merged.attempt).toBe(2);
        // Other messages, another request: the id of the first attempt must not be reused.
        expect(merged.id).not.toBe(turn.id);
      });

      it('forgets the messages listed as final and puts back the others', async () => {
        const p = await pool({ pipelines: [{ id: 'p', busy_mode: 'collect' }] });
        const exhausted = queued('A');
        const retried = queued('A');
        await p.enqueue(exhausted);
        await p.enqueue(retried);
        const turn = (await p.claim()) as Turn;
        expect(texts(turn)).toEqual([exhausted.message.id, retried.message.id]);
        await p.retry(turn, nowMs + 1000, [exhausted.message.id]);
        expect(await p.stats()).toMatchObject({ pending: 1, inflight: 0 });
        nowMs += 1000;
        expect(texts(await p.claim())).toEqual([retried.message.id]);
      });
    });

    describe('when a turn is abandoned', () => {
      it('puts its messages back at the head, runnable at once, the claim counted', async () => {
        const p = await pool();
        const head = queued('A');
        await p.enqueue(head);
        await p.enqueue(queued('A'));
        const turn = (await p.claim()) as Turn;
        await p.abandon(turn);
        expect(await p.stats()).toMatchObject({ pending: 2, inflight: 0 });
        const again = await p.claim();
        expect(texts(again)).toEqual([head.message.id]);
        expect(again?.attempt).toBe(2);
      });

      it('does not count the claim of a turn handed back without running', async () => {
        const p = await pool();
        const head = queued('A');
        await p.enqueue(head);
        await p.abandon((await p.claim()) as Turn, { ran: false });
        const again = await p.claim();
        expect(texts(again)).toEqual([head.message.id]);
        expect(again?.attempt).toBe(1);
      });
    });

    describe('when debounce is enabled', () => {
      it('makes a burst runnable after the delay as one turn', async () => {
        const p = await pool({
          pipelines: [{ id: 'p', aggregation: { enabled: true, delay: '1s' } }, { id: 'q' }],
        });
        await p.enqueue(queued('A'));
        nowMs += 500;
        await p.enqueue(queued('A'));
        nowMs += 999;
        expect(await p.claim()).toBeNull();
        nowMs += 1;
        expect((await p.claim())?.messages).toHaveLength(2);
      });
    });

    describe('when limits are reached', () => {
      it('drops the oldest waiting message of a full session', async () => {
        const p = await pool({ perSessionCap: 2 });
        const oldest = queued('A');
        await p.enqueue(oldest);
        await p.enqueue(queued('A'));
        const result = await p.enqueue(queued('A'));
        expect(result.accepted && result.overflowed.map((m) => m.message.id)).toEqual([oldest.message.id]);
        expect((await p.stats()).pending).toBe(2);
      });

      it('refuses with queue_full past max_pending and with draining after close', async () => {
        const p = await pool({ maxPending: 1 });
        expect((await p.enqueue(queued('A'))).accepted).toBe(true);
        expect(await p.enqueue(queued('B'))).toMatchObject({ accepted: false, reason: 'queue_full' });
        p.close();
        expect(await p.enqueue(queued('C'))).toMatchObject({ accepted: false, reason: 'draining' });
      });
    });

    describe('when enqueues carry a delivery key', () => {
      const delivery = (key: string, ttlMs = 60_000) => ({ key, ttlMs });

      it('queues the first and answers duplicate to the same key, queuing nothing', async () => {
        const p = await pool();
        expect(await p.enqueue(queued('A'), delivery('tg:1'))).toMatchObject({ accepted: true });
        expect(await p.enqueue(queued('A'), delivery('tg:1'))).toEqual({
          accepted: false,
          reason: 'duplicate',
        });
        expect((await p.stats()).pending).toBe(1);
      });

      it('accepts exactly one of several concurrent enqueues with one key', async () => {
        const p = await pool();
        const results = await Promise.all(
          ['A', 'B', 'C', 'D'].map((session) => p.enqueue(queued(session), delivery('sl:Ev1'))),
        );
        expect(results.filter((result) => result.accepted)).toHaveLength(1);
        expect((await p.stats()).pending).toBe(1);
      });

      it('leaves the key of a refused enqueue unseen, so its redelivery is judged again', async () => {
        const p = await pool({ maxPending: 1 });
        await p.enqueue(queued('A'));
        expect(await p.enqueue(queued('B'), delivery('dc:9'))).toMatchObject({
          accepted: false,
          reason: 'queue_full',
        });
        await p.claim();
        expect(await p.enqueue(queued('B'), delivery('dc:9'))).toMatchObject({ accepted: true });
      });

      it('accepts the key again once its TTL has passed', async () => {
        const p = await pool();
        await p.enqueue(queued('A'), delivery('tg:2', 1000));
        nowMs += 1000;
        expect(await p.enqueue(queued('A'), delivery('tg:2', 1000))).toMatchObject({ accepted: true });
      });
    });

    describe('when work finishes', () => {
      it('forgets idle sessions and notifies listeners on arrival', async () => {
        const p = await pool();
        const wakeups = countWakeups(p);
        await p.enqueue(queued('A'));
        expect(wakeups()).toBeGreaterThan(0);
        await p.complete((await p.claim()) as Turn);
        expect(await p.stats()).toMatchObject({ pending: 0, inflight: 0, sessions: 0 });
      });

      it('notifies listeners when complete or retry frees a slot (the controller claims on that alone)', async () => {
        const p = await pool({ global: 1 });
        await p.enqueue(queued('A'));
        await p.enqueue(queued('B'));
        const first = (await p.claim()) as Turn;
        expect(await p.claim()).toBeNull();
        const wakeups = countWakeups(p);
        await p.retry(first, 0);
        expect(wakeups()).toBe(1);
        const again = (await p.claim()) as Turn;
        await p.complete(again);
        expect(wakeups()).toBe(2);
        expect(await p.claim()).not.toBeNull();
      });

      it('takeAll returns every waiting message', async () => {
        const p = await pool();
        await p.enqueue(queued('A'));
        await p.enqueue(queued('B'));
        expect(await p.takeAll()).toHaveLength(2);
        expect((await p.stats()).pending).toBe(0);
      });
    });
  });
}
