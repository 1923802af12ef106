import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { type QueryPool, SwitchboardError, createMemoryJournal } from '../../src/index.js';
import { capturingLogger, createHarness, settle } from '../harness.js';

const retryable = () =>
  new SwitchboardError('SB_PIPELINE_FAILED', { retryable: true, message: 'upstream 503' });

/** A pool wrapper whose claims wait until `release()`: a claim that answers after the stop began. */
function heldClaims() {
  let release = () => {};
  const held = new Promise<void>((resolve) => {
    release = resolve;
  });
  const wrap = (pool: QueryPool): QueryPool => ({
    ...pool,
    claim: async () => {
      await held;
      return pool.claim();
    },
  });
  return { wrap, release: () => release() };
}

describe('controller', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  describe('when two sessions compete for a global limit of 2 (the VikingBot regression)', () => {
    /** Global limit 2; a1 and a2 in session A, then b1 in session B. */
    async function startA1A2B1() {
      const h = createHarness({ concurrency: { global: 2 } });
      h.controller.start();
      await h.send('A', 'a1');
      await h.send('A', 'a2');
      await h.send('B', 'b1');
      await settle();
      return h;
    }

    it('runs a1 and b1 together, a2 only after a1 ends, and a2 never holds a global slot', async () => {
      const h = await startA1A2B1();

      expect(new Set(h.events)).toEqual(new Set(['start:a1', 'start:b1']));
      const stats = await h.pool.stats();
      expect(stats.inflight).toBe(2);
      // a2 waits on its session, not on a global slot: it is pending, not in flight.
      expect(stats.pending).toBe(1);

      h.run('b1').resolve();
      await settle();
      // b1's freed global slot must not go to a2 while a1 holds session A.
      expect(h.events).not.toContain('start:a2');
      expect((await h.pool.stats()).inflight).toBe(1);

      h.run('a1').resolve();
      await settle();
      expect(h.events.indexOf('end:a1')).toBeLessThan(h.events.indexOf('start:a2'));
      h.run('a2').resolve();
      await settle();
      expect(h.outcomes.map((o) => [o.kind, o.message.text])).toEqual([
        ['completed', 'b1'],
        ['completed', 'a1'],
        ['completed', 'a2'],
      ]);
    });

    it('stop lets running turns finish, starts nothing queued, and drops it with a memory store', async () => {
      const h = await startA1A2B1();
      let stopped = false;
      const stopping = h.controller.stop({ drainTimeoutMs: 30_000 }).then(() => {
        stopped = true;
      });
      // A late message is refused, not lost silently.
      expect(await h.send('C', 'late')).toMatchObject({ accepted: false, reason: 'draining' });
      h.run('a1').resolve();
      await settle();
      // a1 freed session A, but a2 was queued when the stop began: it must not start now only
      // to be aborted at the drain timeout.
      expect(h.events).not.toContain('start:a2');
      expect(stopped).toBe(false);
      h.run('b1').resolve();
      await stopping;
      expect(h.outcomes.map((o) => [o.kind, o.reason, o.message.text])).toEqual([
        ['completed', undefined, 'a1'],
        ['completed', undefined, 'b1'],
        ['dropped', 'shutdown', 'a2'],
      ]);
    });
  });

  describe('when a run hands back a write it did not wait for (`saved`: the openai history)', () => {
    it("starts the session's next turn only once that write landed", async () => {
      const h = createHarness();
      h.controller.start();
      await h.send('A', 'a1');
      await h.send('A', 'a2');
      await settle();
      let land: () => void = () => {};
      const saved = new Promise<void>((resolve) => {
        land = resolve;
      });
      h.run('a1').resolve(undefined, saved);
      await settle();
      // The reply is stored and sent; the session stays held for the write the next turn may read.
      expect(h.delivered.map((sent) => sent.replies)).toEqual([[{ text: 'a1' }]]);
      expect(h.events).not.toContain('start:a2');
      land();
      await settle();
      expect(h.events).toContain('start:a2');
    });

    it('logs a write that failed and completes the turn: the answer stands', async () => {
      const logger = capturingLogger();
      const h = createHarness({ logger });
      h.controller.start();
      await h.send('A', 'a1');
      await settle();
      h.run('a1').resolve(undefined, Promise.reject(new Error('disk I/O error')));
      await settle();
      expect(h.outcomes.map((o) => [o.kind, o.message.text])).toEqual([['completed', 'a1']]);
      expect(logger.lines).toContain('warn pipeline write failed');
    });
  });

  describe('when the pool stores an answer in the write that completes its turn (a shared pool)', () => {
    /** A harness whose pool logs the replies each `complete` carries, failing the first with `fail`. */
    function storing(fail?: () => Error) {
      const carried: Array<string | undefined> = [];
      let failNext = fail;
      const h = createHarness({
        storesReplies: true,
        wrapPool: (pool) => ({
          ...pool,
          complete: async (turn, ended, options) => {
            carried.push(options?.replies?.delivery.replies.map((reply) => reply.text).join());
            const failure = failNext?.();
            failNext = undefined;
            if (failure !== undefined) throw failure;
            return pool.complete(turn, ended, options);
          },
        }),
      });
      const claim = vi.spyOn(h.outbox, 'claim');
      const add = vi.spyOn(h.outbox, 'add');
      h.controller.start();
      return { h, carried, claim, add };
    }

    it('completes the turn with its answer in one pool write and sends it with the claim that write made', async () => {
      const { h, carried, claim, add } = storing();
      await h.send('A', 'a1');
      await settle();
      h.run('a1').resolve();
      await settle();
      expect(carried).toEqual(['a1']);
      expect(add).not.toHaveBeenCalled();
      expect(h.delivered.map((sent) => sent.replies)).toEqual([[{ text: 'a1' }]]);
      // Sent without a claim of its own: the settlement claimed it for this sender.
      expect(claim).not.toHaveBeenCalled();
      expect(h.outcomes.map((o) => [o.kind, o.message.text])).toEqual([['completed', 'a1']]);
    });

    it("stores the answer first while the run's own write is under way, and completes once it landed", async () => {
      const { h, carried } = storing();
      await h.send('A', 'a1');
      await h.send('A', 'a2');
      await settle();
      let land: () => void = () => {};
      h.run('a1').resolve(
        undefined,
        new Promise<void>((resolve) => {
          land = resolve;
        }),
      );
      await settle();
      expect(h.delivered.map((sent) => sent.replies)).toEqual([[{ text: 'a1' }]]);
      expect(carried).toEqual([]);
      expect(h.events).not.toContain('start:a2');
      land();
      await settle();
      expect(carried).toEqual([undefined]);
      expect(h.events).toContain('start:a2');
    });

    it('makes that write again while the store is unreachable, and sends the answer once', async () => {
      const { h, carried } = storing(
        () => new SwitchboardError('SB_STORE_UNAVAILABLE', { message: 'redis restarting' }),
      );
      await h.send('A', 'a1');
      await settle();
      h.run('a1').resolve();
      await settle();
      expect(h.delivered).toEqual([]);
      await vi.advanceTimersByTimeAsync(1000);
      await settle();
      expect(carried).toEqual(['a1', 'a1']);
      expect(h.delivered.map((sent) => sent.replies)).toEqual([[{ text: 'a1' }]]);
      expect(h.outcomes.map((o) => [o.kind, o.message.text])).toEqual([['completed', 'a1']]);
    });

    it('dead-letters the turn with its answer undelivered when that write cannot store it', async () => {
      const { h, carried } = storing(() => new TypeError('delivery d1: attempts must be a whole number'));
      await h.send('A', 'a1');
      await settle();
      h.run('a1').resolve();
      await settle();
      expect(carried).toEqual(['a1', undefined]);
      expect(h.delivered).toEqual([]);
      expect(h.outcomes.map((o) => [o.kind, o.reason, o.undelivered?.replies])).toEqual([
        ['dead_lettered', 'delivery_failed', [{ text: 'a1' }]],
      ]);
    });
  });

  describe('when a pipeline fails with a retryable error', () => {
    it('retries after 5 s × 2^(n−1) (jitter neutral) keeping the message ahead of later ones', async () => {
      const h = createHarness({ random: () => 0.5 });
      h.controller.start();
      await h.send('A', 'first');
      await h.send('A', 'second');
      await settle();
      const first = h.run('first');
      first.reject(retryable());
      await settle();
      expect(h.runs).toHaveLength(0);
      await vi.advanceTimersByTimeAsync(4_999);
      expect(h.runs).toHaveLength(0);
      await vi.advanceTimersByTimeAsync(1);
      const again = h.run('first').query;
      expect(again.attempt).toBe(2);
      // The same request for the backend: it deduplicates on the id (ports/pipeline.ts).
      expect(again.id).toBe(first.query.id);
    });

    it('counts attempts per message: one merged into a retried burst is not dead-lettered with it', async () => {
      const h = createHarness({
        pipelines: [
          { id: 'p', busy_mode: 'collect', retry: { max_attempts: 2 }, dead_letter_reply: 'Sorry.' },
        ],
        random: () => 0.5,
      });
      h.controller.start();
      await h.send('A', 'head');
      await settle();
      h.run('head').reject(retryable());
      await settle();
      await h.send('A', 'joined');
      await vi.advanceTimersByTimeAsync(5_000);
      const merged = h.run('head\njoined');
      expect(merged.query.attempt).toBe(2);
      merged.reject(retryable());
      await settle();
      // head used its 2 attempts; joined has used 1 of its own.
      expect(h.outcomes.map((o) => [o.kind, o.reason, o.message.text, o.attempt])).toEqual([
        ['dead_lettered', 'max_attempts', 'head', 2],
      ]);
      expect(h.delivered.map((d) => [d.origin.text, d.replies])).toEqual([['head', [{ text: 'Sorry.' }]]]);
      await vi.advanceTimersByTimeAsync(5_000);
      const alone = h.run('joined');
      expect(alone.query.attempt).toBe(2);
      alone.resolve();
      await settle();
      expect(h.outcomes.map((o) => [o.kind, o.message.text, o.attempt])).toEqual([
        ['dead_lettered', 'head', 2],
        ['completed', 'joined', 2],
      ]);
    });

    it('waits 5, 10, 20 … s capped at 300 s and dead-letters after 10 attempts, order kept behind it', async () => {
      const h = createHarness({ random: () => 0.5 });
      h.controller.start();
      await h.send('A', 'head');
      await h.send('A', 'behind');
      await settle();
      const waits: number[] = [];
      for (let attempt = 1; attempt <= 10; attempt++) {
        const run = h.run('head');
        expect(run.query.attempt).toBe(attempt);
        const failedAt = Date.now();
        run.reject(retryable());
        await settle();
        if (attempt === 10) break;
        while (h.runs.length === 0) await vi.advanceTimersByTimeAsync(1000);
        waits.push(Date.now() - failedAt);
        expect(h.events.filter((e) => e === 'start:behind')).toHaveLength(0);
      }
      expect(waits).toEqual([5, 10, 20, 40, 80, 160, 300, 300, 300].map((s) => s * 1000));
      const deadLetter = h.outcomes.find((o) => o.message.text === 'head');
      expect(deadLetter).toMatchObject({ kind: 'dead_lettered', reason: 'max_attempts', attempt: 10 });
      expect(deadLetter?.error?.message).toBe('upstream 503');
      expect(h.run('behind').query.attempt).toBe(1);
    });

    it('honours a Retry-After longer than the backoff', async () => {
      const h = createHarness({ random: () => 0.5 });
      h.controller.start();
      await h.send('A', 'm');
      await settle();
      h.run('m').reject(
        new SwitchboardError('SB_PIPELINE_FAILED', { retryable: true, retryAfterMs: 42_000 }),
      );
      await vi.advanceTimersByTimeAsync(41_000);
      expect(h.runs).toHaveLength(0);
      await vi.advanceTimersByTimeAsync(1_000);
      expect(h.runs).toHaveLength(1);
    });

    it('waits no longer than max_delay whatever Retry-After the backend sends', async () => {
      const h = createHarness({ pipelines: [{ id: 'p', retry: { max_delay: '60s' } }], random: () => 0.5 });
      h.controller.start();
      await h.send('A', 'm');
      await settle();
      // A year: past Node's longest timer, which used to fire after 1 ms.
      const yearMs = 365 * 86_400_000;
      h.run('m').reject(
        new SwitchboardError('SB_PIPELINE_FAILED', { retryable: true, retryAfterMs: yearMs }),
      );
      await vi.advanceTimersByTimeAsync(59_999);
      expect(h.runs).toHaveLength(0);
      await vi.advanceTimersByTimeAsync(1);
      expect(h.run('m').query.attempt).toBe(2);
    });
  });

  describe('when a pipeline fails with a fatal error', () => {
    it('dead-letters at once and sends the dead letter reply', async () => {
      const h = createHarness({ pipelines: [{ id: 'p', dead_letter_reply: 'Sorry.' }] });
      h.controller.start();
      await h.send('A', 'm');
      await settle();
      h.run('m').reject(new SwitchboardError('SB_PIPELINE_FAILED', { message: 'HTTP 400' }));
      await settle();
      expect(h.outcomes).toMatchObject([{ kind: 'dead_lettered', reason: 'fatal_error', attempt: 1 }]);
      expect(h.delivered.map((d) => d.replies)).toEqual([[{ text: 'Sorry.' }]]);
    });

    it('carries the dead letter reply in the outcome of the message it answers, so that every writer of its status has it', async () => {
      const h = createHarness({
        pipelines: [{ id: 'p', busy_mode: 'collect', dead_letter_reply: 'Sorry.' }],
        random: () => 0.5,
      });
      h.controller.start();
      await h.send('A', 'head');
      await settle();
      h.run('head').reject(retryable());
      await settle();
      await h.send('A', 'joined');
      await vi.advanceTimersByTimeAsync(5_000);
      h.run('head\njoined').reject(new SwitchboardError('SB_PIPELINE_FAILED', { message: 'HTTP 400' }));
      await settle();
      // The apology answers the burst's first message, and only its status shows it.
      expect(h.outcomes.map((o) => [o.kind, o.message.text, o.replies])).toEqual([
        ['dead_lettered', 'head', [{ text: 'Sorry.' }]],
        ['dead_lettered', 'joined', undefined],
      ]);
      expect(h.delivered.map((d) => [d.origin.text, d.replies])).toEqual([['head', [{ text: 'Sorry.' }]]]);
    });

    it('carries no reply in the outcome when none is configured', async () => {
      const h = createHarness();
      h.controller.start();
      await h.send('A', 'm');
      await settle();
      h.run('m').reject(new SwitchboardError('SB_PIPELINE_FAILED', { message: 'HTTP 400' }));
      await settle();
      expect(h.outcomes.map((o) => o.replies)).toEqual([undefined]);
    });

    it("sends the dead letter reply before the session's next replies, however slow its send", async () => {
      const sent: string[] = [];
      const h = createHarness({
        pipelines: [{ id: 'p', dead_letter_reply: 'Sorry.' }],
        onDeliver: async (_query, replies) => {
          // A slow platform: the apology takes a second to go out.
          if (replies[0]?.text === 'Sorry.') await new Promise((resolve) => setTimeout(resolve, 1_000));
          sent.push(replies.map((reply) => reply.text).join());
        },
      });
      h.controller.start();
      await h.send('A', 'first');
      await h.send('A', 'second');
      await settle();
      h.run('first').reject(new SwitchboardError('SB_PIPELINE_FAILED', { message: 'HTTP 400' }));
      await settle();
      // The turn ended once the apology was stored: the next one runs while it is being sent.
      h.run('second').resolve();
      await settle();
      expect(sent).toEqual([]);
      await vi.advanceTimersByTimeAsync(1_000);
      expect(sent).toEqual(['Sorry.', 'second']);
    });

    it('treats an unknown thrown value as fatal', async () => {
      const h = createHarness();
      h.controller.start();
      await h.send('A', 'm');
      await settle();
      h.run('m').reject(new TypeError('bug in the pipeline'));
      await settle();
      expect(h.outcomes).toMatchObject([{ kind: 'dead_lettered', reason: 'fatal_error' }]);
    });
  });

  describe('when a turn runs past its timeout', () => {
    it('aborts its signal at the timeout and retries it as a timeout', async () => {
      const h = createHarness({ pipelines: [{ id: 'p', timeout: '10s' }], random: () => 0.5 });
      h.controller.start();
      await h.send('A', 'slow');
      await settle();
      const run = h.run('slow');
      await vi.advanceTimersByTimeAsync(9_999);
      expect(run.signal.aborted).toBe(false);
      await vi.advanceTimersByTimeAsync(1);
      expect(run.signal.aborted).toBe(true);
      expect(run.signal.reason).toMatchObject({ code: 'SB_PIPELINE_TIMEOUT' });
      run.reject(run.signal.reason);
      await vi.advanceTimersByTimeAsync(5_000);
      expect(h.run('slow').query.attempt).toBe(2);
    });

    it('force-releases a turn that ignores the abort 100 s later with an orphaned turn error', async () => {
      const logger = capturingLogger();
      const h = createHarness({ pipelines: [{ id: 'p', timeout: '10s' }], random: () => 0.5, logger });
      h.controller.start();
      await h.send('A', 'hung');
      await h.send('A', 'next');
      await settle();
      h.run('hung'); // taken and never settled: the pipeline ignores its signal
      await vi.advanceTimersByTimeAsync(10_000 + 99_999);
      expect(h.controller.running).toBe(1);
      expect(logger.lines.filter((line) => line.startsWith('error orphaned turn'))).toHaveLength(0);
      await vi.advanceTimersByTimeAsync(1);
      expect(h.controller.running).toBe(0);
      expect(logger.lines.filter((line) => line.startsWith('error orphaned turn'))).toHaveLength(1);
      // Released as a retryable timeout: the same message runs again first, order kept.
      await vi.advanceTimersByTimeAsync(5_000);
      expect(h.runs.map((run) => [run.query.text, run.query.attempt])).toEqual([['hung', 2]]);
    });
  });

  describe('when the pipeline is no longer configured', () => {
    it('dead-letters its messages with reason pipeline_removed', async () => {
      const h = createHarness();
      h.controller.start();
      await h.send('A', 'm', { pipeline: 'gone' });
      await settle();
      expect(h.outcomes).toMatchObject([
        {
          kind: 'dead_lettered',
          reason: 'pipeline_removed',
          pipeline: 'gone',
          error: { code: 'SB_PIPELINE_MISSING' },
        },
      ]);
      expect((await h.pool.stats()).sessions).toBe(0);
    });
  });

  describe('when the pool tells what may be claimed next', () => {
    /** A pool wrapper counting claims; its settlements wait for `release()` once `hold()` was called. */
    function countedClaims() {
      let claims = 0;
      let held: Promise<void> | undefined;
      let release = () => {};
      const wrap = (pool: QueryPool): QueryPool => ({
        ...pool,
        claim: () => {
          claims += 1;
          return pool.claim();
        },
        complete: async (turn, ended, options) => {
          await held;
          return pool.complete(turn, ended, options);
        },
      });
      const hold = () => {
        held = new Promise((resolve) => {
          release = resolve;
        });
      };
      return { wrap, claims: () => claims, hold, release: () => release() };
    }

    it('claims no more when the pool says nothing more is claimable, and runs the turn a completion claimed', async () => {
      const pool = countedClaims();
      const h = createHarness({ concurrency: { global: 1 }, wrapPool: pool.wrap });
      await h.send('A', 'a1');
      await h.send('B', 'b1');
      h.controller.start();
      await settle();
      expect(h.events).toEqual(['start:a1']);
      expect(pool.claims()).toBe(1);
      h.run('a1').resolve();
      await settle();
      // b1 came with a1's completion: no claim of its own.
      expect(h.events).toEqual(['start:a1', 'end:a1', 'start:b1']);
      expect(pool.claims()).toBe(1);
      h.run('b1').resolve();
      await settle();
      expect(h.outcomes.map((o) => [o.kind, o.message.text])).toEqual([
        ['completed', 'a1'],
        ['completed', 'b1'],
      ]);
      expect(pool.claims()).toBe(1);
    });

    it('hands back unrun a turn a completion claimed once the stop had begun', async () => {
      const pool = countedClaims();
      const journal = createMemoryJournal();
      const h = createHarness({ concurrency: { global: 1 }, journal, wrapPool: pool.wrap });
      h.controller.start();
      await h.send('A', 'a1');
      await h.send('B', 'b1');
      await settle();
      pool.hold();
      h.run('a1').resolve();
      await settle();
      const stopping = h.controller.stop({ drainTimeoutMs: 30_000 });
      pool.release();
      await stopping;
      expect(h.events).toEqual(['start:a1', 'end:a1']);
      expect((await journal.load()).map((queued) => [queued.message.text, queued.attempt])).toEqual([
        ['b1', 0],
      ]);
    });
  });

  describe('when stopping', () => {
    it('starts no buffered burst: a memory store drops it as shutdown', async () => {
      const h = createHarness({
        pipelines: [{ id: 'p', aggregation: { enabled: true, delay: '10s' } }],
        autoReply: true,
      });
      h.controller.start();
      await h.send('A', 'a');
      await h.send('A', 'b');
      await settle();
      expect(h.events).toEqual([]);
      await h.controller.stop({ drainTimeoutMs: 30_000 });
      expect(h.events).toEqual([]);
      expect(h.outcomes.map((o) => [o.kind, o.reason, o.message.text])).toEqual([
        ['dropped', 'shutdown', 'a'],
        ['dropped', 'shutdown', 'b'],
      ]);
    });

    it('does not wait for a retry due after the stop began', async () => {
      const h = createHarness({ random: () => 0.5 });
      h.controller.start();
      await h.send('A', 'm');
      await settle();
      h.run('m').reject(retryable());
      await settle();
      let stopped = false;
      void h.controller.stop({ drainTimeoutMs: 30_000 }).then(() => {
        stopped = true;
      });
      await settle();
      // The retry is queued, not running: it neither holds the drain nor runs during it.
      expect(stopped).toBe(true);
      expect(h.events).toEqual(['start:m', 'end:m']);
      expect(h.outcomes.map((o) => [o.kind, o.reason, o.attempt])).toEqual([['dropped', 'shutdown', 1]]);
    });

    it('hands back a turn whose claim was answered after the stop began', async () => {
      const claims = heldClaims();
      const h = createHarness({ wrapPool: claims.wrap });
      h.controller.start();
      await h.send('A', 'm');
      await settle();
      const stopping = h.controller.stop({ drainTimeoutMs: 30_000 });
      claims.release();
      await settle();
      expect(h.events).toEqual([]);
      await stopping;
      expect(h.outcomes.map((o) => [o.kind, o.reason, o.message.text])).toEqual([
        ['dropped', 'shutdown', 'm'],
      ]);
    });

    it('does not count an attempt for a turn it handed back without running', async () => {
      const claims = heldClaims();
      const journal = createMemoryJournal();
      const h = createHarness({ journal, wrapPool: claims.wrap });
      h.controller.start();
      await h.send('A', 'm');
      await settle();
      const stopping = h.controller.stop({ drainTimeoutMs: 30_000 });
      claims.release();
      await stopping;
      await settle();
      expect(h.events).toEqual([]);
      expect((await journal.load()).map((queued) => [queued.message.text, queued.attempt])).toEqual([
        ['m', 0],
      ]);
    });

    it('waits for a running turn when given a drain timeout past the longest timer delay', async () => {
      const h = createHarness();
      h.controller.start();
      await h.send('A', 'long');
      await settle();
      const run = h.run('long');
      let stopped = false;
      void h.controller.stop({ drainTimeoutMs: 2 ** 32 }).then(() => {
        stopped = true;
      });
      await vi.advanceTimersByTimeAsync(60_000);
      expect(run.signal.aborted).toBe(false);
      run.resolve();
      await settle();
      expect(stopped).toBe(true);
      expect(h.outcomes.map((o) => o.kind)).toEqual(['completed']);
    });

    it('ends the drain without asking the pool for its stats, which may be unreachable', async () => {
      const h = createHarness({
        autoReply: true,
        wrapPool: (pool) => ({
          ...pool,
          stats: () =>
            Promise.reject(new SwitchboardError('SB_STORE_UNAVAILABLE', { message: 'store down' })),
        }),
      });
      h.controller.start();
      await h.send('A', 'm');
      await settle();
      let stopped = false;
      void h.controller.stop({ drainTimeoutMs: 30_000 }).then(() => {
        stopped = true;
      });
      await settle();
      expect(stopped).toBe(true);
      expect(h.outcomes.map((o) => o.kind)).toEqual(['completed']);
    });

    it('aborts turns still running at the drain timeout and drops them when the pool is not durable', async () => {
      const h = createHarness();
      h.controller.start();
      await h.send('A', 'long');
      await h.send('A', 'queued');
      await settle();
      const run = h.run('long');
      const stopping = h.controller.stop({ drainTimeoutMs: 30_000 });
      await vi.advanceTimersByTimeAsync(30_000);
      expect(run.signal.aborted).toBe(true);
      expect(run.signal.reason).toMatchObject({ code: 'SB_SHUTDOWN' });
      run.reject(run.signal.reason);
      await vi.advanceTimersByTimeAsync(2_000);
      await stopping;
      expect(h.outcomes.map((o) => [o.kind, o.reason, o.message.text])).toEqual([
        ['dropped', 'shutdown', 'long'],
        ['dropped', 'shutdown', 'queued'],
      ]);
    });
  });

  describe('when the pool cannot be reached for claims', () => {
    it('retries every second with one ERROR line per 30 s, and runs the turn once the pool is back', async () => {
      const logger = capturingLogger();
      let down = true;
      const h = createHarness({
        autoReply: true,
        logger,
        wrapPool: (pool) => ({
          ...pool,
          claim: () =>
            down
              ? Promise.reject(new SwitchboardError('SB_STORE_UNAVAILABLE', { message: 'redis down' }))
              : pool.claim(),
        }),
      });
      h.controller.start();
      await h.send('A', 'm');
      await vi.advanceTimersByTimeAsync(65_000);
      const failures = logger.lines.filter((line) => line.includes('claim failed'));
      // 66 attempts in 65 s; one line at the first and one each 30 s after.
      expect(failures.length).toBeGreaterThanOrEqual(2);
      expect(failures.length).toBeLessThanOrEqual(3);
      expect(h.outcomes).toEqual([]);
      down = false;
      await vi.advanceTimersByTimeAsync(1_000);
      expect(h.outcomes.map((o) => o.kind)).toEqual(['completed']);
    });
  });

  describe('when the store does not answer a settlement', () => {
    it('writes it again each second until the store is back, recording one outcome', async () => {
      const logger = capturingLogger();
      let failures = 3;
      const h = createHarness({
        autoReply: true,
        logger,
        wrapPool: (pool) => ({
          ...pool,
          complete: (turn) => {
            if (failures === 0) return pool.complete(turn);
            failures -= 1;
            return Promise.reject(new SwitchboardError('SB_STORE_UNAVAILABLE', { message: 'store down' }));
          },
        }),
      });
      h.controller.start();
      await h.send('A', 'm');
      await settle();
      // Its replies are stored (and sent), but the turn holds its slot until its completion lands.
      expect((await h.pool.stats()).inflight).toBe(1);
      await vi.advanceTimersByTimeAsync(3_000);
      expect(h.outcomes.map((o) => o.kind)).toEqual(['completed']);
      expect(h.delivered).toHaveLength(1);
      expect((await h.pool.stats()).inflight).toBe(0);
      expect(logger.lines.filter((line) => line.includes('settlement failed'))).toHaveLength(1);
    });
  });

  describe('when the pool is durable', () => {
    it('keeps aborted and queued messages journaled at the drain timeout and re-runs them after recovery', async () => {
      const journal = createMemoryJournal();
      const h = createHarness({ journal });
      h.controller.start();
      await h.send('A', 'interrupted');
      await h.send('A', 'waiting');
      await settle();
      const run = h.run('interrupted');
      const stopping = h.controller.stop({ drainTimeoutMs: 1_000 });
      await vi.advanceTimersByTimeAsync(1_000);
      run.reject(run.signal.reason);
      await vi.advanceTimersByTimeAsync(2_000);
      await stopping;
      // Nothing was recorded as dropped: both messages wait in the journal for the next start.
      expect(h.outcomes).toEqual([]);
      expect((await journal.load()).map((q) => [q.message.text, q.attempt])).toEqual([
        ['interrupted', 1],
        ['waiting', 0],
      ]);

      const next = createHarness({ journal, autoReply: true });
      await next.pool.recover();
      next.controller.start();
      await settle();
      expect(next.outcomes.map((o) => [o.kind, o.message.text, o.attempt])).toEqual([
        ['completed', 'interrupted', 2],
        ['completed', 'waiting', 1],
      ]);
      expect(await journal.load()).toEqual([]);
    });

    it('dead-letters at claim, without running it, a message whose every attempt was cut short', async () => {
      const journal = createMemoryJournal();
      const policy = { id: 'p', retry: { max_attempts: 2 } };
      const crashed = createHarness({ journal, pipelines: [policy] });
      crashed.controller.start();
      await crashed.send('A', 'kills the process');
      await crashed.send('B', 'fine');
      await settle();
      // Two starts of each, each ended by the process dying: the journal keeps attempt 2.
      await journal.markStarted(
        (await journal.load()).map((q) => q.message.id),
        2,
      );

      const next = createHarness({ journal, pipelines: [policy], autoReply: true });
      await next.pool.recover();
      next.controller.start();
      await settle();
      expect(next.events).toEqual([]);
      expect(next.outcomes.map((o) => [o.kind, o.reason, o.message.text, o.attempt])).toEqual([
        ['dead_lettered', 'max_attempts', 'kills the process', 3],
        ['dead_lettered', 'max_attempts', 'fine', 3],
      ]);
      expect(await journal.load()).toEqual([]);
    });

    it('keeps a buffered burst journaled at the stop, without starting it', async () => {
      const journal = createMemoryJournal();
      const h = createHarness({
        journal,
        pipelines: [{ id: 'p', aggregation: { enabled: true, delay: '10s' } }],
        autoReply: true,
      });
      h.controller.start();
      await h.send('A', 'a');
      await h.send('A', 'b');
      await settle();
      await h.controller.stop({ drainTimeoutMs: 30_000 });
      expect(h.events).toEqual([]);
      expect(h.outcomes).toEqual([]);
      expect((await journal.load()).map((q) => [q.message.text, q.attempt])).toEqual([
        ['a', 0],
        ['b', 0],
      ]);
    });
  });

  describe("when the turn's channel shows typing", () => {
    /** A harness whose typing indicators record when they start and stop, and what was delivered then. */
    function typingHarness() {
      const typing: string[] = [];
      const h = createHarness({
        typing: (query) => {
          typing.push(`start:${query.text}`);
          return {
            stop: () => typing.push(`stop:${query.text} delivered:${h.delivered.length}`),
          };
        },
      });
      return { h, typing };
    }

    it('types from the start of the turn and stops once the pipeline answered, before the reply is sent', async () => {
      const { h, typing } = typingHarness();
      h.controller.start();
      await h.send('A', 'a1');
      await settle();
      expect(typing).toEqual(['start:a1']);
      h.run('a1').resolve();
      await settle();
      expect(typing).toEqual(['start:a1', 'stop:a1 delivered:0']);
      expect(h.delivered).toHaveLength(1);
    });

    it('never starts, or stops, when the query for the pipeline cannot be made', async () => {
      const typing: string[] = [];
      const h = createHarness({
        typing: (query) => {
          typing.push(`start:${query.text}`);
          return { stop: () => typing.push(`stop:${query.text}`) };
        },
        queryFor: () => {
          throw new Error('no media links');
        },
      });
      h.controller.start();
      await h.send('A', 'a1');
      await settle();
      expect(typing.filter((each) => each.startsWith('start')).length).toBe(
        typing.filter((each) => each.startsWith('stop')).length,
      );
    });

    it('stops when the pipeline fails', async () => {
      const { h, typing } = typingHarness();
      h.controller.start();
      await h.send('A', 'a1');
      await settle();
      h.run('a1').reject(retryable());
      await settle();
      expect(typing).toEqual(['start:a1', 'stop:a1 delivered:0']);
    });
  });
});
