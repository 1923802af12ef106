import type { Turn } from '@switchboard/core';
import { describe, expect, it } from 'vitest';
import { manualClock, queued, redisReachable, usePools } from './redis-harness.js';

const reachable = await redisReachable();
const ids = (turn: Turn | null) => turn?.messages.map((m) => m.message.id) ?? null;

describe.skipIf(!reachable)('readiness: debounce and backoff (pool/includes/place-session.lua)', () => {
  const pools = usePools();
  const debounced = (aggregation: Record<string, unknown>) => ({
    pipelines: [{ id: 'p', aggregation: { enabled: true, ...aggregation } }],
  });

  describe('when a pipeline debounces', () => {
    it('makes a run runnable `delay` after its last message', async () => {
      const clock = manualClock();
      const pool = await pools.open({ now: clock.now, ...debounced({ delay: '1s' }) });
      await pool.enqueue(queued('A', clock.now()));
      clock.advance(600);
      await pool.enqueue(queued('A', clock.now()));
      clock.advance(999);
      expect(await pool.claim()).toBeNull();
      clock.advance(1);
      expect((await pool.claim())?.messages).toHaveLength(2);
    });

    it('makes a run runnable `max_wait` after its first message however it grows', async () => {
      const clock = manualClock();
      const pool = await pools.open({ now: clock.now, ...debounced({ delay: '1s', max_wait: '2s' }) });
      for (let index = 0; index < 4; index++) {
        await pool.enqueue(queued('A', clock.now()));
        clock.advance(600);
      }
      // 2400 ms after the first message, 600 ms after the last.
      expect((await pool.claim())?.messages).toHaveLength(4);
    });

    it('makes a run runnable at once at `max_messages`, and leaves the rest for the next turn', async () => {
      const clock = manualClock();
      const pool = await pools.open({ now: clock.now, ...debounced({ delay: '1s', max_messages: 2 }) });
      const sent = [queued('A', clock.now()), queued('A', clock.now()), queued('A', clock.now())];
      for (const message of sent) await pool.enqueue(message);
      const turn = (await pool.claim()) as Turn;
      expect(ids(turn)).toEqual([sent[0]?.message.id, sent[1]?.message.id]);
    });

    it('ends a run at another sender, which makes the run before it runnable', async () => {
      const clock = manualClock();
      const pool = await pools.open({ now: clock.now, ...debounced({ delay: '1s' }) });
      const mine = queued('A', clock.now());
      const theirs = queued('A', clock.now(), {});
      theirs.message.sender = { id: 'someone-else', is_bot: false };
      await pool.enqueue(mine);
      expect(await pool.claim()).toBeNull();
      await pool.enqueue(theirs);
      expect(ids(await pool.claim())).toEqual([mine.message.id]);
    });
  });

  describe('when turns are retried', () => {
    it('runs each session again after its delay, oldest head first once both are due', async () => {
      const clock = manualClock();
      const pool = await pools.open({ now: clock.now });
      const older = queued('A', clock.now());
      const newer = queued('B', clock.now());
      await pool.enqueue(older);
      await pool.enqueue(newer);
      const a = (await pool.claim()) as Turn;
      const b = (await pool.claim()) as Turn;
      await pool.retry(b, 1000);
      await pool.retry(a, 3000);
      clock.advance(1000);
      expect((await pool.claim())?.session).toBe('B');
      clock.advance(5000);
      await pool.enqueue(queued('C', clock.now()));
      expect((await pool.claim())?.session).toBe('A');
      expect((await pool.claim())?.session).toBe('C');
    });

    it('keeps the retried message ahead of the ones that arrived meanwhile', async () => {
      const clock = manualClock();
      const pool = await pools.open({ now: clock.now });
      const head = queued('A', clock.now());
      await pool.enqueue(head);
      const turn = (await pool.claim()) as Turn;
      const later = queued('A', clock.now());
      await pool.enqueue(later);
      await pool.retry(turn, 500);
      expect(await pool.claim()).toBeNull();
      clock.advance(500);
      expect(ids(await pool.claim())).toEqual([head.message.id]);
    });
  });
});
