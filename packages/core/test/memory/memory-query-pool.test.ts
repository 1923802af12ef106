import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  PipelinePolicySchema,
  SwitchboardError,
  type Turn,
  createMemoryJournal,
  createMemoryQueryPool,
} from '../../src/index.js';
import { capturingLogger, createHarness, message, queuedMessage, settle } from '../harness.js';

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

  describe('when the journal holds a message marked answered (its replies wait in the outbox)', () => {
    it('returns it from recover for the channels to follow, and never hands it out to run again', async () => {
      const journal = createMemoryJournal();
      const answered = queuedMessage('A', 'answered before the crash');
      const waiting = queuedMessage('A', 'still queued');
      await journal.append({ ...answered, answered: true });
      await journal.append(waiting);
      const h = createHarness({ journal, autoReply: true });

      const recovered = await h.pool.recover();
      expect(recovered.map((queued) => [queued.message.text, queued.answered])).toEqual([
        ['answered before the crash', true],
        ['still queued', undefined],
      ]);
      h.controller.start();
      await settle();
      expect(h.outcomes.map((o) => [o.kind, o.message.text])).toEqual([['completed', 'still queued']]);
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
      // A Retry-After of a year: longer than a Node timer can wait.
      await pool.retry(turn, 365 * 86_400_000);
      const readsBefore = clockReads;
      await vi.advanceTimersByTimeAsync(10_000);
      expect(clockReads - readsBefore).toBeLessThanOrEqual(2);
      expect(await pool.claim()).toBeNull();
    });
  });
});
