import type { Turn } from '@switchboard/core';
import { describe, expect, it } from 'vitest';
import { manualClock, queued, recordingLogger, redisReachable, usePools } from './redis-harness.js';

const reachable = await redisReachable();

describe.skipIf(!reachable)('pool/claim.lua reclaiming expired leases', () => {
  const pools = usePools();

  describe('when a replica stops renewing a turn past its lease', () => {
    it('puts its messages back at the head of their session, attempts kept, and logs lease expired', async () => {
      const clock = manualClock();
      const logger = recordingLogger();
      const pipelines = [{ id: 'p', busy_mode: 'collect' as const }];
      const dying = await pools.open({ now: clock.now, leaseMs: 15_000, pipelines });
      const survivor = await pools.open({ now: clock.now, leaseMs: 15_000, pipelines, logger });
      const first = queued('A', clock.now());
      const second = queued('A', clock.now());
      const later = queued('A', clock.now());
      await dying.enqueue(first);
      await dying.enqueue(second);
      const held = (await dying.claim()) as Turn;
      expect(held.messages.map((m) => m.message.id)).toEqual([first.message.id, second.message.id]);
      await survivor.enqueue(later);

      clock.advance(14_999);
      expect(await survivor.claim()).toBeNull();
      clock.advance(1);
      const taken = (await survivor.claim()) as Turn;

      expect(taken.messages.map((m) => [m.message.id, m.attempt])).toEqual([
        [first.message.id, 2],
        [second.message.id, 2],
        [later.message.id, 1],
      ]);
      const expired = logger.lines.filter((line) => line.message.startsWith('lease expired'));
      expect(expired).toHaveLength(1);
      expect(expired[0]).toMatchObject({
        level: 'error',
        bindings: { turnId: held.id, token: held.lease.token, session: 'A', holder: dying.replicaId },
      });
    });

    it('lets the replica that lost it settle nothing', async () => {
      const clock = manualClock();
      const dying = await pools.open({ now: clock.now });
      const survivor = await pools.open({ now: clock.now });
      await dying.enqueue(queued('A', clock.now()));
      const held = (await dying.claim()) as Turn;
      clock.advance(15_000);
      const taken = (await survivor.claim()) as Turn;
      expect(taken.id).toBe(held.id);

      expect(await dying.complete(held)).toBe('lost');
      expect(await dying.retry(held, 0)).toBe('lost');
      expect(await dying.abandon(held)).toBe('lost');
      expect(await survivor.stats()).toMatchObject({ pending: 0, inflight: 1 });
      expect(await survivor.complete(taken)).toBe('settled');
    });
  });
});
