import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { REDIS_URL, manualClock, queued, redisReachable, usePools } from './redis-harness.js';

const reachable = await redisReachable();

// A lease written by the build before cca3a801 has no `messages` field: a new replica settling it
// during a rolling upgrade must forget its messages as before (reading them back).
describe.skipIf(!reachable)('review: settling a lease written without its messages field', () => {
  const pools = usePools();

  for (const how of ['complete', 'retry-final'] as const) {
    it(`${how}: forgets the messages and marks their ids settled with channel and pipeline`, async () => {
      const clock = manualClock();
      const pool = await pools.open({ now: clock.now });
      const message = queued('A', clock.now());
      await pool.enqueue(message);
      await pool.enqueue(queued('A', clock.now()));
      const turn = await pool.claim();
      if (turn === null) throw new Error('nothing claimed');
      const admin = new Redis(REDIS_URL);
      try {
        const prefix = `{${pools.prefix}}:`;
        const leaseKey = `${prefix}lease:${turn.lease?.token}`;
        expect(await admin.hexists(leaseKey, 'messages')).toBe(1);
        await admin.hdel(leaseKey, 'messages');
        const settled =
          how === 'complete'
            ? await pool.complete(turn, [])
            : await pool.retry(turn, 0, [message.message.id], []);
        expect(settled).toBe('settled');
        expect(await admin.get(`${prefix}id:${message.message.id}`)).toBe(
          `settled:${message.message.channel}:p`,
        );
        expect(await pool.stats()).toMatchObject({ pending: 1, inflight: 0 });
        // The second message of the session runs next.
        const next = await pool.claim();
        expect(next?.session).toBe('A');
      } finally {
        admin.disconnect();
      }
    });
  }
});
