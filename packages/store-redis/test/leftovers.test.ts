import type { Turn } from '@switchboard/core';
import { eventually } from '@switchboard/testkit/eventually';
import { poolKeyNames } from '@switchboard/testkit/redis';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { REDIS_URL, manualClock, queued, redisReachable, usePools } from './redis-harness.js';

const reachable = await redisReachable();
/** Keyed messages, then as many unkeyed ones, as the store README's bound states them. */
const MESSAGES = 10_000;
const HOUR_MS = 3_600_000;

describe.skipIf(!reachable)('what the pool leaves in Redis (packages/store-redis/README.md "Keys")', () => {
  const pools = usePools();

  it(`comes back to its fixed keys after ${MESSAGES} keyed then ${MESSAGES} unkeyed messages and a replica's death`, {
    timeout: 240_000,
  }, async () => {
    const clock = manualClock();
    const timing = { now: clock.now, leaseMs: HOUR_MS, fenceAfterMs: HOUR_MS / 2 };
    const live = await pools.open({ ...timing, renewEveryMs: 50, replicaId: 'live' });
    // Registered, then silent for good: a replica killed with nothing running.
    await pools.open({ ...timing, renewEveryMs: HOUR_MS / 4, replicaId: 'dead' });

    const batch = 500;
    for (const keyed of [true, false]) {
      for (let from = 0; from < MESSAGES; from += batch) {
        await Promise.all(
          Array.from({ length: batch }, (_, index) =>
            live.enqueue(
              queued(`s${(from + index) % 50}`, clock.now()),
              keyed ? { key: `tg:${from + index}`, ttlMs: 60_000 } : undefined,
            ),
          ),
        );
        for (let turn = await live.claim(); turn !== null; turn = await live.claim()) {
          expect(await live.complete(turn as Turn)).toBe('settled');
        }
      }
    }
    expect(await live.stats()).toMatchObject({ pending: 0, inflight: 0, sessions: 0 });

    // Past every window (delivery keys 60 s, remembered enqueues 55 s, tombstones 60 s) and the
    // dead replica's heartbeat: the live replica's renewals purge the rest.
    clock.advance(HOUR_MS + 1);
    const admin = new Redis(REDIS_URL);
    try {
      const named = async () =>
        (await poolKeyNames(admin, pools.prefix)).map((key) => key.split('}:')[1] as string);
      const fixed = async () => (await named()).filter((name) => !name.startsWith('id:')).sort();
      await eventually(async () => (await fixed()).length === 5, 60_000, 'the pool back to its fixed keys');
      expect(await fixed()).toEqual(['config', 'counts', 'format', 'replicas', 'seq']);
      expect(await admin.zrange(`{${pools.prefix}}:replicas`, '0', '-1')).toEqual(['live']);
      // What remains per message is its id key, which Redis itself drops within 60 s.
      const idKeys = (await poolKeyNames(admin, pools.prefix)).filter((key) => key.includes('}:id:'));
      expect(idKeys.length).toBeLessThanOrEqual(2 * MESSAGES);
      for (const key of idKeys.slice(0, 100)) {
        const ttl = await admin.pttl(key);
        expect(ttl).toBeGreaterThan(0);
        expect(ttl).toBeLessThanOrEqual(60_000);
      }
    } finally {
      admin.disconnect();
    }
  });
});
