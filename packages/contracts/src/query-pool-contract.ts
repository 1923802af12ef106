import { type TestContext, afterEach, describe, expect, it } from 'vitest';
import {
  type ClaimedTurn,
  type PipelinePolicyInput,
  PipelinePolicySchema,
  type QueryPool,
  type QueuedMessage,
  type Turn,
} from '@switchboard/core';
import { queuedMessageFixture } from './store-harness.js';
import { PoolsUnderTest, type QueryPoolFactory } from './query-pool-factory.js';
import { queryPoolTenantsContract } from './query-pool-tenants-contract.js';

const CLOCK_START_MS = Date.UTC(2025, 0, 1);

/** What a pool under the contract promises beyond one session. */
export interface QueryPoolScope {
  /**
   * The pool spreads its sessions over partitions (docs/design.md §5 "Partitions"): only the
   * global limit and the per-session promises hold across them; the order between sessions,
   * pipeline and tenant limits and shares, `max_pending`, a delivery key's deduplication (for
   * one session's messages only), the turn a settlement hands over and an exact `more` hold
   * within a partition. The cases that compare sessions pool-wide are skipped.
   */
  partitioned?: boolean;
}

/**
 * The contract of `QueryPool` (docs/design.md §2 "Query pool"): every implementation — in memory,
 * journaled, Redis — runs it. Time is the suite's clock, so debounce and backoff are checked
 * without waiting.
 */
export function queryPoolContract(name: string, factory: QueryPoolFactory, scope: QueryPoolScope = {}): void {
  // Tenant shares are kept per partition: the cases compare tenants pool-wide.
  if (scope.partitioned !== true) queryPoolTenantsContract(name, factory);
  /** A case that compares sessions, or counts limits, across the whole pool. */
  const poolWide = scope.partitioned === true ? it.skip : it;
  describe(`${name} (QueryPool contract)`, () => {
    let nowMs = CLOCK_START_MS;
    const pools = new PoolsUnderTest();
    afterEach(async () => {
      await pools.closeAll();
      nowMs = CLOCK_START_MS;
    });

    type PoolOptions = {
      global?: number;
      perSession?: number;
      maxPending?: number;
      perSessionCap?: number;
      pipelines?: PipelinePolicyInput[];
    };
    async function pool(options: PoolOptions = {}): Promise<QueryPool> {
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
      return pools.add(harness);
    }

    const peerOf = (p: QueryPool, context: TestContext) => pools.peerOf(p, context);

    /** Waits (real time, bounded) until `condition` holds: for timers and pub/sub, never a sleep. */
    async function eventually(condition: () => boolean, what: string, withinMs = 5000): Promise<void> {
      const deadline = Date.now() + withinMs;
      while (!condition()) {
        if (Date.now() > deadline) throw new Error(`not within ${withinMs} ms: ${what}`);
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
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

    /** A message of `session`, from one sender per session (so debounce may merge them) unless `sender` says. */
    function queued(
      session: string,
      extra: Partial<QueuedMessage> = {},
      sender = `sender-${session}`,
    ): QueuedMessage {
      sequence += 1;
      const base = queuedMessageFixture(sequence);
      base.message.sender = { id: sender, is_bot: false };
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

    describe('when a message is claimed', () => {
      it('hands it out whole, its trace context included, so a turn run elsewhere joins its trace', async () => {
        const p = await pool();
        const a = queued('A');
        expect(a.message.traceparent).toMatch(/^00-/);
        // A copy goes in, so that a pool handing back the enqueued object proves nothing.
        await p.enqueue(structuredClone(a));
        expect((await p.claim())?.messages[0]?.message).toEqual(a.message);
      });

      it('hands it out whole to another replica too', async (context) => {
        const p = await pool();
        const peer = await peerOf(p, context);
        const a = queued('A');
        await p.enqueue(structuredClone(a));
        expect((await peer.claim())?.messages[0]?.message).toEqual(a.message);
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

    describe('when a claim tells whether more may be claimed', () => {
      poolWide('says more while another turn is claimable, and not after the last one', async () => {
        const p = await pool({ global: 2 });
        for (const session of ['A', 'B', 'C']) await p.enqueue(queued(session));
        expect((await p.claim())?.more).toBe(true);
        // The global limit is reached: C waits, and a claim now would find nothing.
        expect((await p.claim())?.more).toBe(false);
        expect(await p.claim()).toBeNull();
      });

      poolWide('does not count a session held by its own running turn as more', async () => {
        const p = await pool();
        await p.enqueue(queued('A'));
        await p.enqueue(queued('A'));
        expect((await p.claim())?.more).toBe(false);
      });
    });

    describe('when a settlement claims the next turn', () => {
      /** Settles with `settle`, asking for the next turn; returns the turns handed over. */
      async function settleClaimingNext(
        settle: (claimNext: (turn: ClaimedTurn) => void) => Promise<unknown>,
      ): Promise<ClaimedTurn[]> {
        const handed: ClaimedTurn[] = [];
        await settle((turn) => handed.push(turn));
        return handed;
      }

      poolWide('complete hands over the next message of the session as a claim of its own', async () => {
        const p = await pool();
        const [a, b] = [queued('A'), queued('A')];
        await p.enqueue(a);
        await p.enqueue(b);
        const first = (await p.claim()) as Turn;
        const handed = await settleClaimingNext((claimNext) => p.complete(first, [], { claimNext }));
        expect(handed.map(texts)).toEqual([[b.message.id]]);
        const next = handed[0] as ClaimedTurn;
        expect(next.attempt).toBe(1);
        expect(next.lease.token).not.toBe(first.lease.token);
        expect(next.more).toBe(false);
        expect((await p.stats()).inflight).toBe(1);
        expect(await p.claim()).toBeNull();
        expect(await p.complete(next)).toBe('settled');
        expect(await p.stats()).toMatchObject({ pending: 0, inflight: 0, sessions: 0 });
      });

      poolWide('complete hands over a turn of another session when its own has none', async () => {
        const p = await pool({ global: 1 });
        await p.enqueue(queued('A'));
        const b = queued('B');
        await p.enqueue(b);
        const first = (await p.claim()) as Turn;
        const handed = await settleClaimingNext((claimNext) => p.complete(first, [], { claimNext }));
        expect(handed.map(texts)).toEqual([[b.message.id]]);
      });

      it('hands over nothing when nothing is claimable, or when the settlement is lost', async () => {
        const p = await pool();
        await p.enqueue(queued('A'));
        const first = (await p.claim()) as Turn;
        expect(await settleClaimingNext((claimNext) => p.complete(first, [], { claimNext }))).toEqual([]);
        await p.enqueue(queued('B'));
        expect(await settleClaimingNext((claimNext) => p.complete(first, [], { claimNext }))).toEqual([]);
        expect((await p.claim())?.session).toBe('B');
      });

      poolWide('retry puts the turn back and hands over the next runnable one', async () => {
        const p = await pool();
        const [a, b] = [queued('A'), queued('B')];
        await p.enqueue(a);
        await p.enqueue(b);
        const first = (await p.claim()) as Turn;
        const handed = await settleClaimingNext((claimNext) => p.retry(first, 1000, [], [], { claimNext }));
        expect(handed.map(texts)).toEqual([[b.message.id]]);
        nowMs += 1000;
        const again = await p.claim();
        expect(texts(again)).toEqual([a.message.id]);
        expect(again?.attempt).toBe(2);
      });

      it('retry without delay may hand the same messages straight back, as a new claim', async () => {
        const p = await pool();
        const a = queued('A');
        await p.enqueue(a);
        const first = (await p.claim()) as Turn;
        const handed = await settleClaimingNext((claimNext) => p.retry(first, 0, [], [], { claimNext }));
        expect(handed.map(texts)).toEqual([[a.message.id]]);
        expect(handed[0]?.attempt).toBe(2);
        expect(await p.complete(first)).toBe('lost');
        expect(await p.complete(handed[0] as Turn)).toBe('settled');
      });
    });

    describe('when several sessions wait', () => {
      poolWide('hands out the session whose head is oldest first', async () => {
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

      poolWide('keeps a pipeline within its max_concurrency while others run', async () => {
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

    describe('when a reload reconfigures the pool', () => {
      poolWide(
        'claims by the new limits from then on, keeping the turns running, and a full queue takes more',
        async () => {
          const p = await pool({
            global: 1,
            maxPending: 3,
            pipelines: [{ id: 'p', max_concurrency: 1 }, { id: 'q' }],
          });
          for (const session of ['A', 'B', 'C']) await p.enqueue(queued(session));
          expect((await p.enqueue(queued('D'))).accepted).toBe(false);
          const running = (await p.claim()) as Turn;
          expect(await p.claim()).toBeNull();

          const policies = [{ id: 'p', max_concurrency: 3 }, { id: 'q' }].map((input) =>
            PipelinePolicySchema.parse(input),
          );
          await p.reconfigure({
            concurrency: { global: 3, perSession: 1 },
            limits: { maxPending: 10, maxPendingPerSession: 500 },
            pipelines: policies,
          });
          expect((await p.enqueue(queued('D'))).accepted).toBe(true);
          expect((await p.claim())?.session).toBe('B');
          expect((await p.claim())?.session).toBe('C');
          expect(await p.claim()).toBeNull();
          expect((await p.stats()).inflight).toBe(3);
          expect(await p.complete(running)).toBe('settled');
          expect((await p.claim())?.session).toBe('D');
        },
      );
    });

    describe('when concurrency.session is 2', () => {
      it('runs two turns of one session at once, never a third', async () => {
        const p = await pool({ perSession: 2 });
        const [s1, s2, s3] = [queued('A'), queued('A'), queued('A')];
        for (const message of [s1, s2, s3]) await p.enqueue(message as QueuedMessage);
        const first = await p.claim();
        expect(texts(first)).toEqual([s1?.message.id]);
        expect(texts(await p.claim())).toEqual([s2?.message.id]);
        expect(await p.claim()).toBeNull();
        await p.complete(first as Turn);
        expect(texts(await p.claim())).toEqual([s3?.message.id]);
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
        await p.retry(turn, 5000);
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
        await p.retry(turn, 0);
        expect((await p.claim())?.id).toBe(turn.id);
      });

      it('counts attempts per message when a later message joins the retried burst', async () => {
        const p = await pool({ pipelines: [{ id: 'p', busy_mode: 'collect' }] });
        const head = queued('A');
        const joining = queued('A');
        await p.enqueue(head);
        const turn = (await p.claim()) as Turn;
        await p.enqueue(joining);
        await p.retry(turn, 5000);
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
        await p.retry(turn, 1000, [exhausted.message.id]);
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
      const debounced = (aggregation: Record<string, unknown> = {}) => ({
        pipelines: [{ id: 'p', aggregation: { enabled: true, delay: '1s', ...aggregation } }, { id: 'q' }],
      });

      it('makes a burst runnable `delay` after its last message, as one turn', async () => {
        const p = await pool(debounced());
        await p.enqueue(queued('A'));
        nowMs += 500;
        await p.enqueue(queued('A'));
        nowMs += 999;
        expect(await p.claim()).toBeNull();
        nowMs += 1;
        expect((await p.claim())?.messages).toHaveLength(2);
      });

      it('bounds a burst that never pauses by max_wait after its first message', async () => {
        const p = await pool(debounced({ max_wait: '3s', max_messages: 100 }));
        for (let second = 0; second < 3; second++) {
          await p.enqueue(queued('A'));
          nowMs += 900;
          expect(await p.claim()).toBeNull();
        }
        await p.enqueue(queued('A'));
        // 3.6 s after the first message: past max_wait although the last one came just now.
        nowMs += 900;
        expect((await p.claim())?.messages).toHaveLength(4);
      });

      it('makes the burst runnable at once when max_messages are buffered', async () => {
        const p = await pool(debounced({ max_messages: 3 }));
        await p.enqueue(queued('A'));
        await p.enqueue(queued('A'));
        expect(await p.claim()).toBeNull();
        await p.enqueue(queued('A'));
        await p.enqueue(queued('A'));
        expect((await p.claim())?.messages).toHaveLength(3);
      });

      it('ends a group run at another sender: the first run is runnable at once, alone', async () => {
        const p = await pool(debounced());
        const x1 = queued('G', {}, 'alice');
        const x2 = queued('G', {}, 'alice');
        await p.enqueue(x1);
        await p.enqueue(x2);
        await p.enqueue(queued('G', {}, 'bob'));
        expect(texts(await p.claim())).toEqual([x1.message.id, x2.message.id]);
      });

      it('never merges messages of two pipelines in one session', async () => {
        const p = await pool({
          pipelines: [
            { id: 'p', aggregation: { enabled: true, delay: '1s' } },
            { id: 'q', aggregation: { enabled: true, delay: '1s' } },
          ],
        });
        const p1 = queued('A');
        await p.enqueue(p1);
        await p.enqueue(queued('A', { pipeline: 'q' }));
        await p.enqueue(queued('A'));
        expect(texts(await p.claim())).toEqual([p1.message.id]);
      });

      it('wakes the listeners when the burst becomes due, with no call in between', async () => {
        const p = await pool(debounced({ delay: '100ms' }));
        await p.enqueue(queued('A'));
        const wakeups = countWakeups(p);
        nowMs += 100;
        await eventually(() => wakeups() > 0, 'a wake-up once the debounce delay has passed');
        expect(await p.claim()).not.toBeNull();
      });
    });

    describe('when busy_mode is collect', () => {
      it('merges what piled up while the session was busy, up to max_messages', async () => {
        const p = await pool({
          pipelines: [{ id: 'p', busy_mode: 'collect', aggregation: { max_messages: 3 } }],
        });
        await p.enqueue(queued('A'));
        const first = (await p.claim()) as Turn;
        const piled = [queued('A'), queued('A'), queued('A'), queued('A')];
        for (const message of piled) await p.enqueue(message);
        await p.complete(first);
        expect(texts(await p.claim())).toEqual(piled.slice(0, 3).map((m) => m.message.id));
      });

      it('runs one message per turn in queue mode', async () => {
        const p = await pool();
        await p.enqueue(queued('A'));
        const first = (await p.claim()) as Turn;
        const b = queued('A');
        await p.enqueue(b);
        await p.enqueue(queued('A'));
        await p.complete(first);
        expect(texts(await p.claim())).toEqual([b.message.id]);
      });
    });

    describe('when turns wait on backoff', () => {
      it('gives a retried session, once due, its original age: ahead of a later session', async () => {
        const p = await pool({ global: 1 });
        const a1 = queued('A');
        await p.enqueue(a1);
        const failed = (await p.claim()) as Turn;
        await p.enqueue(queued('B'));
        await p.retry(failed, 5000);
        // B runs during A's backoff and holds the only slot; C arrives meanwhile.
        const b1 = (await p.claim()) as Turn;
        expect(b1.session).toBe('B');
        await p.enqueue(queued('C'));
        nowMs += 5000;
        await p.complete(b1);
        const next = await p.claim();
        expect(texts(next)).toEqual([a1.message.id]);
        expect(next?.attempt).toBe(2);
      });

      poolWide('lets the retry due first run first', async () => {
        const p = await pool();
        await p.enqueue(queued('A'));
        await p.enqueue(queued('B'));
        const a = (await p.claim()) as Turn;
        const b = (await p.claim()) as Turn;
        await p.retry(a, 3000);
        await p.retry(b, 1000);
        nowMs += 1000;
        expect((await p.claim())?.session).toBe('B');
        expect(await p.claim()).toBeNull();
        nowMs += 2000;
        expect((await p.claim())?.session).toBe('A');
      });

      it('wakes the listeners when the retry becomes due, with no call in between', async () => {
        const p = await pool();
        await p.enqueue(queued('A'));
        await p.retry((await p.claim()) as Turn, 100);
        const wakeups = countWakeups(p);
        nowMs += 100;
        await eventually(() => wakeups() > 0, 'a wake-up once the backoff has passed');
        expect(await p.claim()).not.toBeNull();
      });
    });

    describe('when a turn is settled by a claim that no longer holds it', () => {
      it('answers lost to a second settlement and changes nothing', async () => {
        const p = await pool();
        await p.enqueue(queued('A'));
        const later = queued('A');
        await p.enqueue(later);
        const turn = (await p.claim()) as Turn;
        expect(await p.complete(turn)).toBe('settled');
        const next = (await p.claim()) as Turn;
        expect(await p.complete(turn)).toBe('lost');
        expect(await p.retry(turn, 0)).toBe('lost');
        expect(await p.abandon(turn)).toBe('lost');
        expect(await p.stats()).toMatchObject({ pending: 0, inflight: 1 });
        expect(texts(next)).toEqual([later.message.id]);
      });

      it('answers lost to the stale claim of messages claimed again, leaving the new claim alone', async () => {
        const p = await pool();
        await p.enqueue(queued('A'));
        const stale = (await p.claim()) as Turn;
        await p.abandon(stale);
        const current = (await p.claim()) as Turn;
        // Same messages, same turn id: only the lease tells the claims apart.
        expect(current.id).toBe(stale.id);
        expect(current.lease.token).not.toBe(stale.lease.token);
        expect(await p.complete(stale)).toBe('lost');
        expect((await p.stats()).inflight).toBe(1);
        expect(await p.complete(current)).toBe('settled');
      });
    });

    describe('when two replicas share the store', () => {
      poolWide('holds the global and pipeline limits across both', async (context) => {
        const a = await pool({ global: 2, pipelines: [{ id: 'p', max_concurrency: 1 }, { id: 'q' }] });
        const b = await peerOf(a, context);
        await a.enqueue(queued('A'));
        await b.enqueue(queued('B'));
        await a.enqueue(queued('C', { pipeline: 'q' }));
        await b.enqueue(queued('D', { pipeline: 'q' }));
        expect((await a.claim())?.session).toBe('A');
        // B waits for pipeline p's one slot, held by the other replica.
        expect((await b.claim())?.session).toBe('C');
        expect(await b.claim()).toBeNull();
        expect(await a.claim()).toBeNull();
        expect((await b.stats()).inflight).toBe(2);
      });

      it('runs one session in order across both: the peer waits for the session slot', async (context) => {
        const a = await pool();
        const b = await peerOf(a, context);
        const first = queued('A');
        const second = queued('A');
        await a.enqueue(first);
        await b.enqueue(second);
        const turn = (await b.claim()) as Turn;
        expect(texts(turn)).toEqual([first.message.id]);
        expect(await a.claim()).toBeNull();
        expect(await b.complete(turn)).toBe('settled');
        expect(texts(await a.claim())).toEqual([second.message.id]);
      });

      it('wakes the other replica when work arrives through one', async (context) => {
        const a = await pool();
        const b = await peerOf(a, context);
        const wakeups = countWakeups(b);
        await a.enqueue(queued('A'));
        await eventually(() => wakeups() > 0, 'the peer is woken by an enqueue on the other replica');
      });

      it('reclaims an expired lease with its attempt kept; the old holder is told lost', async (context) => {
        const a = await pool();
        const b = await peerOf(a, context);
        const head = queued('A');
        await a.enqueue(head);
        const later = queued('A');
        await a.enqueue(later);
        const held = (await a.claim()) as Turn;
        expect(held.lease.expiresAt).not.toBeNull();
        expect(await b.claim()).toBeNull();
        nowMs = (held.lease.expiresAt as number) + 1;
        const taken = await b.claim();
        // Back at the head of its session, ahead of the later message, this claim counted too.
        expect(texts(taken)).toEqual([head.message.id]);
        expect(taken?.attempt).toBe(2);
        expect(taken?.id).toBe(held.id);
        expect(await a.complete(held)).toBe('lost');
        expect(await b.complete(taken as Turn)).toBe('settled');
        expect(texts(await a.claim())).toEqual([later.message.id]);
      });

      it('tells either replica where a message stands: queued, running, queued again, settled', async (context) => {
        const a = await pool();
        const b = await peerOf(a, context);
        if (b.locate === undefined) return context.skip('the pool does not locate messages');
        const locate = b.locate.bind(b);
        const head = queued('A', { rule: 'r1' });
        const later = queued('A');
        const dropped = queued('A');
        await a.enqueue(head);
        await a.enqueue(later);
        // The channel too: a channel answers only for its own messages.
        const channel = head.message.channel;
        expect(await locate(head.message.id)).toEqual({
          state: 'queued',
          pipeline: 'p',
          channel,
          rule: 'r1',
        });
        const turn = (await a.claim()) as Turn;
        expect(await locate(head.message.id)).toMatchObject({ state: 'running' });
        expect(await locate(later.message.id)).toMatchObject({ state: 'queued', pipeline: 'p' });
        expect(await a.retry(turn, 1000)).toBe('settled');
        expect(await locate(head.message.id)).toMatchObject({ state: 'queued' });
        nowMs += 1000;
        const again = (await b.claim()) as Turn;
        expect(await b.complete(again)).toBe('settled');
        expect(await locate(head.message.id)).toEqual({
          state: 'settled',
          pipeline: 'p',
          channel,
          rule: null,
        });
        expect(await a.locate?.(dropped.message.id)).toBeNull();
      });

      it('deduplicates one delivery key across both', async (context) => {
        const a = await pool();
        const b = await peerOf(a, context);
        const delivery = { key: 'tg:77', ttlMs: 60_000 };
        const results = await Promise.all([
          a.enqueue(queued('A'), delivery),
          b.enqueue(queued('A'), delivery),
        ]);
        expect(results.filter((result) => result.accepted)).toHaveLength(1);
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

      poolWide('refuses with queue_full past max_pending and with draining after close', async () => {
        const p = await pool({ maxPending: 1 });
        expect((await p.enqueue(queued('A'))).accepted).toBe(true);
        expect(await p.enqueue(queued('B'))).toMatchObject({ accepted: false, reason: 'queue_full' });
        p.close();
        expect(await p.enqueue(queued('C'))).toMatchObject({ accepted: false, reason: 'draining' });
      });
    });

    describe('when a message is enqueued again as a replay', () => {
      it('takes a replay of the same message (another request id) as a new message', async () => {
        const p = await pool();
        const message = queued('A');
        await p.enqueue(structuredClone(message));
        expect(await p.enqueue({ ...structuredClone(message), replayOf: 'dead-letter-1' })).toEqual({
          accepted: true,
          overflowed: [],
        });
        expect((await p.stats()).pending).toBe(2);
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

      poolWide('accepts exactly one of several concurrent enqueues with one key', async () => {
        const p = await pool();
        const results = await Promise.all(
          ['A', 'B', 'C', 'D'].map((session) => p.enqueue(queued(session), delivery('sl:Ev1'))),
        );
        expect(results.filter((result) => result.accepted)).toHaveLength(1);
        expect((await p.stats()).pending).toBe(1);
      });

      poolWide('leaves the key of a refused enqueue unseen, so its redelivery is judged again', async () => {
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

      poolWide('says a key is seen exactly while an enqueue with it would be a duplicate', async () => {
        const p = await pool({ maxPending: 1 });
        expect(await p.seen('tg:3')).toBe(false);
        await p.enqueue(queued('A'), delivery('tg:3', 1000));
        expect(await p.seen('tg:3')).toBe(true);
        expect(await p.seen('tg:4')).toBe(false);
        // A refused enqueue marks nothing.
        await p.enqueue(queued('B'), delivery('tg:5'));
        expect(await p.seen('tg:5')).toBe(false);
        nowMs += 1000;
        expect(await p.seen('tg:3')).toBe(false);
      });
    });

    describe('when operators look at the queues (stats per pipeline)', () => {
      poolWide(
        'counts waiting messages and the oldest wait per pipeline, through claims, overflow and takeAll',
        async () => {
          const p = await pool({ perSessionCap: 2 });
          expect(await p.stats()).toMatchObject({
            pendingByPipeline: { p: 0, q: 0 },
            oldestWaitMsByPipeline: { p: 0, q: 0 },
          });
          await p.enqueue(queued('A'));
          nowMs += 100;
          await p.enqueue(queued('B', { pipeline: 'q' }));
          nowMs += 50;
          await p.enqueue(queued('C'));
          expect(await p.stats()).toMatchObject({
            pending: 3,
            pendingByPipeline: { p: 2, q: 1 },
            oldestWaitMsByPipeline: { p: 150, q: 50 },
          });
          // A (the oldest head) runs: p's oldest waiting message is now C.
          const turn = (await p.claim()) as Turn;
          expect(turn.session).toBe('A');
          expect(await p.stats()).toMatchObject({
            pendingByPipeline: { p: 1, q: 1 },
            oldestWaitMsByPipeline: { p: 0, q: 50 },
          });
          // C's session overflows: its oldest waiting message (C) is dropped.
          nowMs += 10;
          await p.enqueue(queued('C'));
          await p.enqueue(queued('C'));
          expect(await p.stats()).toMatchObject({
            pendingByPipeline: { p: 2, q: 1 },
            oldestWaitMsByPipeline: { p: 0, q: 60 },
          });
          await p.takeAll();
          expect(await p.stats()).toMatchObject({
            pendingByPipeline: { p: 0, q: 0 },
            oldestWaitMsByPipeline: { p: 0, q: 0 },
          });
          expect(await p.complete(turn)).toBe('settled');
        },
      );

      it('gives a retried message back its age in the oldest wait', async () => {
        const p = await pool();
        await p.enqueue(queued('A'));
        nowMs += 40;
        const turn = (await p.claim()) as Turn;
        expect((await p.stats()).pendingByPipeline.p).toBe(0);
        nowMs += 60;
        await p.retry(turn, 1000);
        expect(await p.stats()).toMatchObject({
          pendingByPipeline: { p: 1 },
          oldestWaitMsByPipeline: { p: 100 },
        });
      });
    });

    describe('when operators look at the sessions', () => {
      it('lists the longest-waiting ready sessions with their pending counts, up to the limit', async () => {
        const p = await pool();
        await p.enqueue(queued('S2'));
        nowMs += 30;
        await p.enqueue(queued('S1', { pipeline: 'q' }));
        await p.enqueue(queued('S1', { pipeline: 'q' }));
        nowMs += 20;
        await p.enqueue(queued('S3'));
        const view = await p.sessions(2);
        expect(view.waiting).toEqual([
          { session: 'S2', pipeline: 'p', pending: 1, oldestWaitMs: 50 },
          { session: 'S1', pipeline: 'q', pending: 2, oldestWaitMs: 20 },
        ]);
        expect(view.running).toEqual([]);
        expect((await p.sessions(10)).waiting.map((entry) => entry.session)).toEqual(['S2', 'S1', 'S3']);
      });

      poolWide(
        'lists only the ready sessions of the pipelines asked for, however many older ones others have',
        async () => {
          const p = await pool();
          for (const session of ['P1', 'P2', 'P3']) await p.enqueue(queued(session));
          await p.enqueue(queued('Q1', { pipeline: 'q' }));
          expect((await p.sessions(2)).waiting.map((entry) => entry.session)).toEqual(['P1', 'P2']);
          expect((await p.sessions(2, ['q'])).waiting.map((entry) => entry.session)).toEqual(['Q1']);
          expect((await p.sessions(2, ['q', 'gone'])).waiting.map((entry) => entry.session)).toEqual(['Q1']);
        },
      );

      it('lists no ready session for no pipelines (a tenant that has none)', async () => {
        const p = await pool();
        await p.enqueue(queued('P1'));
        expect((await p.sessions(2, [])).waiting).toEqual([]);
      });

      it('lists running turns with their session, age and what waits behind them; not as waiting', async () => {
        const p = await pool();
        await p.enqueue(queued('A'));
        await p.enqueue(queued('A'));
        const turn = (await p.claim()) as Turn;
        nowMs += 75;
        const view = await p.sessions(50);
        expect(view.running).toEqual([
          {
            turnId: turn.id,
            session: 'A',
            pipeline: 'p',
            messages: 1,
            ageMs: 75,
            replica: turn.lease.expiresAt === null ? null : expect.any(String),
            pending: 1,
          },
        ]);
        // A's second message waits on A's own running turn, so A is not among the ready sessions.
        expect(view.waiting).toEqual([]);
        await p.complete(turn);
        expect((await p.sessions(50)).running).toEqual([]);
      });

      it('shows each replica the turns of both, naming the replica that claimed each', async (context) => {
        const a = await pool();
        const b = await peerOf(a, context);
        await a.enqueue(queued('A'));
        await a.enqueue(queued('B'));
        const first = (await a.claim()) as Turn;
        nowMs += 10;
        const second = (await b.claim()) as Turn;
        const running = (await b.sessions(50)).running;
        expect(running.map((entry) => entry.session)).toEqual([first.session, second.session]);
        const [byA, byB] = running.map((entry) => entry.replica);
        expect(byA).toEqual(expect.any(String));
        expect(byB).toEqual(expect.any(String));
        expect(byA).not.toBe(byB);
        expect((await a.sessions(50)).running).toEqual(running);
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
