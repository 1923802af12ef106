import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  PipelinePolicySchema,
  SwitchboardError,
  type Turn,
  createMemoryJournal,
  createMemoryQueryPool,
} from '../src/index.js';
import { capturingLogger, createHarness, message, settle } from './harness.js';

const debounced = (extra: Record<string, unknown> = {}) => ({
  id: 'p',
  aggregation: { enabled: true, delay: '1.5s', ...extra },
});

describe('memory query pool', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  describe('when debounce is enabled', () => {
    it('merges three messages sent within the delay into one query a\\nb\\nc', async () => {
      const h = createHarness({ pipelines: [debounced()] });
      h.controller.start();
      await h.send('A', 'a');
      await vi.advanceTimersByTimeAsync(1000);
      await h.send('A', 'b');
      await vi.advanceTimersByTimeAsync(1000);
      await h.send('A', 'c');
      await vi.advanceTimersByTimeAsync(1499);
      expect(h.events).toEqual([]);
      await vi.advanceTimersByTimeAsync(1);
      expect(h.events).toEqual(['start:a\nb\nc']);
      const run = h.runs[0];
      expect(run?.query.messages.map((m) => m.text)).toEqual(['a', 'b', 'c']);
      // The first message's context is kept.
      expect(run?.query.message.text).toBe('a');
      run?.resolve();
      await settle();
      expect(h.outcomes.map((o) => o.kind)).toEqual(['completed', 'completed', 'completed']);
      expect(new Set(h.outcomes.map((o) => o.turnId)).size).toBe(1);
    });

    it('flushes at once when the 10th message arrives', async () => {
      const h = createHarness({ pipelines: [debounced()] });
      h.controller.start();
      for (let i = 1; i <= 9; i++) await h.send('A', `m${i}`);
      await settle();
      expect(h.events).toEqual([]);
      await h.send('A', 'm10');
      await settle();
      expect(h.runs).toHaveLength(1);
      expect(h.runs[0]?.query.messages).toHaveLength(10);
    });

    it('bounds a burst that never pauses by max_wait (5 × delay by default)', async () => {
      const h = createHarness({ pipelines: [debounced({ max_messages: 100 })] });
      h.controller.start();
      let sent = 0;
      while (h.runs.length === 0) {
        await h.send('A', `m${sent++}`);
        await vi.advanceTimersByTimeAsync(1000);
      }
      // First message at t=0; the run is due at 7.5 s although messages keep coming every 1 s.
      expect(sent).toBe(8);
      expect(h.runs[0]?.query.messages).toHaveLength(8);
    });

    it('never merges messages of two pipelines in one session', async () => {
      const h = createHarness({ pipelines: [debounced(), { id: 'q', aggregation: { enabled: true } }] });
      h.controller.start();
      await h.send('A', 'p1');
      await h.send('A', 'q1', { pipeline: 'q' });
      await h.send('A', 'p2');
      await vi.advanceTimersByTimeAsync(10_000);
      expect(h.runs.map((r) => r.query.text)).toEqual(['p1']);
      h.run('p1').resolve();
      await vi.advanceTimersByTimeAsync(10_000);
      h.run('q1').resolve();
      await vi.advanceTimersByTimeAsync(10_000);
      h.run('p2').resolve();
      await settle();
      expect(h.outcomes.map((o) => [o.message.text, o.pipeline])).toEqual([
        ['p1', 'p'],
        ['q1', 'q'],
        ['p2', 'p'],
      ]);
    });

    it('ends a group run at another sender and credits the first sender', async () => {
      const h = createHarness({ pipelines: [debounced()] });
      h.controller.start();
      await h.send('G', 'x1', { sender: 'alice', chatType: 'group' });
      await h.send('G', 'x2', { sender: 'alice', chatType: 'group' });
      await h.send('G', 'y1', { sender: 'bob', chatType: 'group' });
      await settle();
      // Alice's run is closed by Bob's message: no reason to wait any longer.
      expect(h.runs.map((r) => [r.query.text, r.query.message.sender.id])).toEqual([['x1\nx2', 'alice']]);
    });
  });

  describe('when busy_mode is collect', () => {
    it('merges everything that piled up for the pipeline while the session was busy', async () => {
      const h = createHarness({
        pipelines: [{ id: 'p', busy_mode: 'collect', aggregation: { max_messages: 3 } }],
      });
      h.controller.start();
      await h.send('A', 'first');
      await settle();
      for (const text of ['b', 'c', 'd', 'e']) await h.send('A', text);
      h.run('first').resolve();
      await settle();
      expect(h.runs.map((r) => r.query.text)).toEqual(['b\nc\nd']);
    });

    it('runs one turn per message in queue mode', async () => {
      const h = createHarness();
      h.controller.start();
      await h.send('A', 'first');
      await settle();
      await h.send('A', 'b');
      await h.send('A', 'c');
      h.run('first').resolve();
      await settle();
      expect(h.runs.map((r) => r.query.text)).toEqual(['b']);
    });
  });

  describe('when several sessions wait for a slot', () => {
    it('gives free slots to the session whose head is oldest: S3, S1, S2', async () => {
      const h = createHarness({ concurrency: { global: 1 } });
      h.controller.start();
      await h.send('S0', 'blocker');
      await settle();
      await h.send('S3', 's3');
      await h.send('S1', 's1');
      await h.send('S2', 's2');
      await h.send('S3', 's3-later');
      h.run('blocker').resolve();
      for (const expected of ['s3', 's1', 's2', 's3-later']) {
        await settle();
        expect(h.runs.map((r) => r.query.text)).toEqual([expected]);
        h.run(expected).resolve();
      }
    });

    it('keeps a retried session at its original age', async () => {
      const h = createHarness({ concurrency: { global: 1 }, random: () => 0.5 });
      h.controller.start();
      await h.send('A', 'a1');
      await settle();
      await h.send('B', 'b1');
      h.run('a1').reject(new SwitchboardError('SB_PIPELINE_FAILED', { retryable: true }));
      await settle();
      const b1 = h.run('b1'); // b1 runs during a1's backoff and holds the only slot
      await h.send('C', 'c1');
      await vi.advanceTimersByTimeAsync(5_000);
      b1.resolve();
      await settle();
      // a1 was accepted before c1, so its retry goes first.
      expect(h.runs.map((r) => [r.query.text, r.query.attempt])).toEqual([['a1', 2]]);
    });
  });

  describe('when concurrency.session is 2', () => {
    it('runs two turns of one session at once, never a third', async () => {
      const h = createHarness({ concurrency: { perSession: 2 } });
      h.controller.start();
      for (const text of ['s1', 's2', 's3']) await h.send('A', text);
      await settle();
      expect(h.runs.map((r) => r.query.text)).toEqual(['s1', 's2']);
      h.run('s1').resolve();
      await settle();
      expect(h.runs.map((r) => r.query.text)).toEqual(['s2', 's3']);
    });
  });

  describe('when a session overflows max_pending_per_session', () => {
    it('drops the oldest waiting message and reports it', async () => {
      const h = createHarness({ limits: { maxPendingPerSession: 3 } });
      h.controller.start();
      await h.send('A', 'running');
      await settle();
      await h.send('A', 'w1');
      await h.send('A', 'w2');
      await h.send('A', 'w3');
      const result = await h.send('A', 'w4');
      expect(result.accepted && result.overflowed.map((q) => q.message.text)).toEqual(['w1']);
      expect((await h.pool.stats()).pending).toBe(3);
    });
  });

  describe('when the pool holds max_pending messages', () => {
    it('refuses new messages with queue_full and a retry hint', async () => {
      const h = createHarness({ limits: { maxPending: 2 } });
      await h.send('A', '1');
      await h.send('B', '2');
      expect(await h.send('C', '3')).toEqual({ accepted: false, reason: 'queue_full', retryAfterMs: 1000 });
    });

    it('accepts no more than max_pending of enqueues that await their journal writes together', async () => {
      const h = createHarness({ journal: createMemoryJournal(), limits: { maxPending: 5 } });
      const results = await Promise.all(Array.from({ length: 12 }, (_, i) => h.send(`S${i}`, `m${i}`)));
      expect(results.filter((result) => result.accepted)).toHaveLength(5);
      expect((await h.pool.stats()).pending).toBe(5);
    });

    it('gives the place taken by a failed journal write back', async () => {
      const journal = createMemoryJournal();
      let failNext = true;
      const h = createHarness({
        journal: {
          ...journal,
          append: (entry, delivery) => {
            if (!failNext) return journal.append(entry, delivery);
            failNext = false;
            return Promise.reject(new SwitchboardError('SB_STORE_UNAVAILABLE', { message: 'disk full' }));
          },
        },
        limits: { maxPending: 1 },
      });
      await expect(h.send('A', 'failed')).rejects.toThrow('disk full');
      expect(await h.send('B', 'accepted')).toMatchObject({ accepted: true });
    });
  });

  describe('when the platform will not deliver a message again (enqueue with last)', () => {
    const queued = (session: string, text: string) => ({
      message: message(session, text),
      session: `test:c:person:${session}`,
      pipeline: 'p',
      routedByRule: false,
      attempt: 0,
      acceptedAt: 0,
    });

    it('keeps it while draining when a journal holds it for the next start', async () => {
      const journal = createMemoryJournal();
      const pool = createMemoryQueryPool({
        concurrency: { global: 1, perSession: 1 },
        limits: { maxPending: 1, maxPendingPerSession: 10 },
        pipelines: [PipelinePolicySchema.parse({ id: 'p' })],
        journal,
      });
      pool.close();
      expect(await pool.enqueue(queued('A', 'x'))).toMatchObject({ accepted: false, reason: 'draining' });
      expect(await pool.enqueue(queued('A', 'y'), undefined, { last: true })).toMatchObject({
        accepted: true,
      });
      expect((await journal.load()).map((entry) => entry.message.text)).toEqual(['y']);
    });

    it('refuses it while draining without a journal: nothing would keep it', async () => {
      const pool = createMemoryQueryPool({
        concurrency: { global: 1, perSession: 1 },
        limits: { maxPending: 1, maxPendingPerSession: 10 },
        pipelines: [PipelinePolicySchema.parse({ id: 'p' })],
      });
      pool.close();
      expect(await pool.enqueue(queued('A', 'y'), undefined, { last: true })).toMatchObject({
        accepted: false,
        reason: 'draining',
      });
    });
  });

  describe('when sessions finish', () => {
    it('forgets them: no per-session state is left', async () => {
      const h = createHarness({ autoReply: true });
      h.controller.start();
      for (let i = 0; i < 100; i++) await h.send(`S${i}`, `m${i}`);
      await settle(10);
      expect(await h.pool.stats()).toMatchObject({ pending: 0, inflight: 0, sessions: 0 });
      expect(h.outcomes).toHaveLength(100);
    });
  });

  describe('when the journal fails a write the pool does not wait for', () => {
    it('still runs and completes the turn, and logs each failed turn start and removal', async () => {
      const journal = createMemoryJournal();
      const failing = new SwitchboardError('SB_STORE_UNAVAILABLE', { message: 'disk full' });
      const logger = capturingLogger();
      const h = createHarness({
        journal: {
          ...journal,
          markStarted: () => Promise.reject(failing),
          remove: () => Promise.reject(failing),
        },
        autoReply: true,
        logger,
      });
      h.controller.start();
      await h.send('A', 'a');
      await settle();
      expect(h.outcomes.map((o) => o.kind)).toEqual(['completed']);
      expect(logger.lines.filter((line) => line.startsWith('error journal'))).toEqual([
        'error journal turn start failed: the message may run again after a restart',
        'error journal removal failed: the message may run again after a restart',
      ]);
    });
  });

  describe('when the process restarts while a retry waits on backoff', () => {
    it('recovers the retry time from the journal and runs the message only when due', async () => {
      const journal = createMemoryJournal();
      const h = createHarness({ journal, random: () => 0.5 });
      h.controller.start();
      await h.send('A', 'retried');
      await h.send('B', 'fresh');
      await settle();
      h.run('retried').reject(new SwitchboardError('SB_PIPELINE_FAILED', { retryable: true }));
      h.run('fresh').reject(new SwitchboardError('SB_PIPELINE_FAILED', { retryable: true }));
      await settle();
      // Both wait 5 s; the process stops 1 s into the backoff.
      await vi.advanceTimersByTimeAsync(1_000);
      await h.controller.stop({ drainTimeoutMs: 0 });

      const next = createHarness({ journal, autoReply: true });
      await next.pool.recover();
      next.controller.start();
      await vi.advanceTimersByTimeAsync(3_999);
      expect(next.events).toEqual([]);
      await vi.advanceTimersByTimeAsync(1);
      expect(next.outcomes.map((o) => [o.kind, o.message.text, o.attempt])).toEqual([
        ['completed', 'retried', 2],
        ['completed', 'fresh', 2],
      ]);
    });
  });

  describe('when the only due time is far in the future', () => {
    it('sleeps until then instead of reading its clock every millisecond', async () => {
      let clockReads = 0;
      const pool = createMemoryQueryPool({
        concurrency: { global: 20, perSession: 1 },
        limits: { maxPending: 10_000, maxPendingPerSession: 500 },
        pipelines: [PipelinePolicySchema.parse({ id: 'p' })],
        now: () => {
          clockReads += 1;
          return Date.now();
        },
      });
      const inbound = message('A', 'later');
      await pool.enqueue({
        message: inbound,
        session: 'A',
        pipeline: 'p',
        routedByRule: false,
        attempt: 0,
        acceptedAt: Date.now(),
      });
      const turn = (await pool.claim()) as Turn;
      // A Retry-After of a year, as a pool shared with an older replica could be handed.
      await pool.retry(turn, Date.now() + 365 * 86_400_000);
      const readsBefore = clockReads;
      await vi.advanceTimersByTimeAsync(10_000);
      expect(clockReads - readsBefore).toBeLessThanOrEqual(2);
      expect(await pool.claim()).toBeNull();
    });
  });
});
