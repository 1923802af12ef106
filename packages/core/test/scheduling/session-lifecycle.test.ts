import { describe, expect, it } from 'vitest';
import { createHarness, settle } from '../harness.js';

describe('per-session state', () => {
  // Each answer also passes through the outbox and the reply sender, so the count is what a CI
  // box runs in a minute or two; a per-session leak shows at this scale as well as at a million.
  describe('when 200,000 distinct sessions are each processed once', () => {
    it('leaves no per-session entry in the pool, the controller or the outbox', {
      timeout: 240_000,
    }, async () => {
      const h = createHarness({ autoReply: true, concurrency: { global: 20 } });
      h.controller.start();
      const batch = 10_000;
      let peakSessions = 0;
      for (let start = 0; start < 200_000; start += batch) {
        // Sent together, so the batch queues up behind the 20 slots and the pool holds its sessions.
        const sends: Promise<unknown>[] = [];
        for (let i = start; i < start + batch; i++) sends.push(h.send(`s${i}`, 'x'));
        await Promise.all(sends);
        peakSessions = Math.max(peakSessions, (await h.pool.stats()).sessions);
        while (
          (await h.pool.stats()).pending > 0 ||
          h.controller.running > 0 ||
          Object.keys(await h.outbox.pending()).length > 0
        )
          await settle(1);
        h.outcomes.length = 0;
        h.delivered.length = 0;
        h.events.length = 0;
      }
      // The pool did hold sessions while they were busy…
      expect(peakSessions).toBeGreaterThan(0);
      // …and forgot every one of them afterwards.
      expect(await h.pool.stats()).toMatchObject({ pending: 0, inflight: 0, sessions: 0 });
      expect(h.controller.running).toBe(0);
      expect(await h.outbox.pending()).toEqual({});
    });
  });
});
