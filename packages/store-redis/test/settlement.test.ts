import type { QueryPool, Settlement, Turn } from '@switchboard/core';
import { eventually } from '@switchboard/testkit/eventually';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import {
  REDIS_URL,
  manualClock,
  openScriptRunner,
  poolKeyNames,
  queued,
  recordingLogger,
  redisReachable,
  usePools,
} from './redis-harness.js';

const reachable = await redisReachable();

describe.skipIf(!reachable)('pool/complete.lua, pool/retry.lua, pool/abandon.lua', () => {
  const pools = usePools();

  describe('when a turn is settled twice', () => {
    const settlements: Array<[string, (pool: QueryPool, turn: Turn) => Promise<Settlement>]> = [
      ['complete', (pool, turn) => pool.complete(turn)],
      ['retry', (pool, turn) => pool.retry(turn, 1000)],
      ['abandon', (pool, turn) => pool.abandon(turn)],
    ];
    it.each(settlements)('answers lost to the second %s and changes nothing', async (_name, settle) => {
      const clock = manualClock();
      const pool = await pools.open({ now: clock.now });
      await pool.enqueue(queued('A', clock.now()));
      await pool.enqueue(queued('B', clock.now()));
      const turn = (await pool.claim()) as Turn;
      const other = (await pool.claim()) as Turn;
      expect(await settle(pool, turn)).toBe('settled');
      const after = await pool.stats();
      expect(await settle(pool, turn)).toBe('lost');
      expect(await pool.stats()).toEqual(after);
      expect(await pool.complete(other)).toBe('settled');
    });
  });

  describe('when a turn carries a token the pool never handed out', () => {
    it('answers lost', async () => {
      const clock = manualClock();
      const pool = await pools.open({ now: clock.now });
      await pool.enqueue(queued('A', clock.now()));
      const turn = (await pool.claim()) as Turn;
      const forged = { ...turn, lease: { token: 'not-a-token', expiresAt: null } };
      expect(await pool.complete(forged)).toBe('lost');
      expect(await pool.stats()).toMatchObject({ inflight: 1 });
    });
  });

  describe('when a retried turn lists final messages', () => {
    it('forgets those and puts the others back due after the delay', async () => {
      const clock = manualClock();
      const pool = await pools.open({ now: clock.now, pipelines: [{ id: 'p', busy_mode: 'collect' }] });
      const exhausted = queued('A', clock.now());
      const retried = queued('A', clock.now());
      await pool.enqueue(exhausted);
      await pool.enqueue(retried);
      const turn = (await pool.claim()) as Turn;
      expect(await pool.retry(turn, 2000, [exhausted.message.id])).toBe('settled');
      expect(await pool.stats()).toMatchObject({ pending: 1, inflight: 0, sessions: 1 });
      clock.advance(1999);
      expect(await pool.claim()).toBeNull();
      clock.advance(1);
      const again = (await pool.claim()) as Turn;
      expect(again.messages.map((m) => [m.message.id, m.attempt, m.retryAtMs])).toEqual([
        [retried.message.id, 2, clock.now()],
      ]);
    });
  });

  describe('when an abandoned turn never ran', () => {
    it('does not count its claim as an attempt', async () => {
      const clock = manualClock();
      const pool = await pools.open({ now: clock.now });
      await pool.enqueue(queued('A', clock.now()));
      expect(await pool.abandon((await pool.claim()) as Turn, { ran: false })).toBe('settled');
      expect(((await pool.claim()) as Turn).attempt).toBe(1);
    });
  });

  describe('when a retry delay is not a finite number', () => {
    it('retries a NaN delay at once and bounds an infinite one', async () => {
      const clock = manualClock();
      const pool = await pools.open({ now: clock.now });
      await pool.enqueue(queued('A', clock.now()));
      await pool.enqueue(queued('B', clock.now()));
      const a = (await pool.claim()) as Turn;
      const b = (await pool.claim()) as Turn;
      expect(await pool.retry(a, Number.NaN)).toBe('settled');
      expect(await pool.retry(b, Number.POSITIVE_INFINITY)).toBe('settled');
      const again = (await pool.claim()) as Turn;
      expect(again.session).toBe('A');
      await pool.complete(again);
      expect(await pool.claim()).toBeNull();
      clock.advance(2 ** 31 - 1);
      expect((await pool.claim())?.session).toBe('B');
    });
  });

  describe('when everything has settled', () => {
    it('leaves no per-session, per-message or per-lease key behind; id keys say settled and expire', async () => {
      const clock = manualClock();
      const pool = await pools.open({
        now: clock.now,
        limits: { maxPending: 100, maxPendingPerSession: 2 },
        pipelines: [
          { id: 'p', busy_mode: 'collect' },
          { id: 'q', aggregation: { enabled: true } },
        ],
      });
      const overflowing = queued('A', clock.now());
      for (const message of [queued('A', clock.now()), queued('A', clock.now()), overflowing])
        await pool.enqueue(message);
      for (const session of ['B', 'C']) await pool.enqueue(queued(session, clock.now()));
      await pool.enqueue(queued('D', clock.now(), { pipeline: 'q' }), { key: 'tg:1', ttlMs: 1000 });
      const a = (await pool.claim()) as Turn;
      await pool.retry(a, 1000, [a.messages[0]?.message.id as string]);
      await pool.abandon((await pool.claim()) as Turn, { ran: false });
      clock.advance(10_000);
      for (let turn = await pool.claim(); turn !== null; turn = await pool.claim()) await pool.complete(turn);
      expect(await pool.stats()).toMatchObject({ pending: 0, inflight: 0, sessions: 0 });

      const runner = await openScriptRunner(REDIS_URL, pools.prefix, clock.now);
      try {
        const keys = await poolKeyNames(runner.client, pools.prefix);
        const idKeys = keys.filter((key) => key.split('}:')[1]?.startsWith('id:'));
        const left = keys
          .filter((key) => !idKeys.includes(key))
          .map((key) => key.split('}:')[1])
          .sort();
        // Besides the fixed keys, what the enqueue that overflowed session A dropped, remembered
        // with its request id for a repeat until the enqueues of the last 55 s are forgotten.
        expect(left).toEqual([
          'config',
          'counts',
          'dedup',
          'enqueued',
          `enqueued:${overflowing.message.id}`,
          'format',
          'pipelines',
          'replicas',
          'seq',
          'settled',
        ]);
        // One per message enqueued (the one dropped from the full session A included).
        expect(idKeys).toHaveLength(6);
        for (const key of idKeys) {
          expect(await runner.client.get(key)).toMatch(/^settled:tg:[pq]$/);
          expect(await runner.client.pttl(key)).toBeGreaterThan(0);
          expect(await runner.client.pttl(key)).toBeLessThanOrEqual(60_000);
        }
      } finally {
        await runner.close();
      }
    });
  });

  describe('when a settlement fails with an error other than the store being unreachable', () => {
    it('stops renewing the lease, so the turn runs again elsewhere once it expires', async () => {
      const clock = manualClock();
      const logger = recordingLogger();
      const leaseMs = 15_000;
      const holder = await pools.open({ now: clock.now, renewEveryMs: 20, leaseMs, logger });
      await holder.enqueue(queued('A', clock.now()));
      const turn = (await holder.claim()) as Turn;
      const admin = new Redis(REDIS_URL);
      const leaseKey = `{${pools.prefix}}:lease:${turn.lease.token}`;
      const heartbeat = async () =>
        Number(await admin.zscore(`{${pools.prefix}}:replicas`, holder.replicaId));
      try {
        // The lease record put aside for a key of the wrong type, in one step (a renewal between
        // the two would find no lease and give the turn up): the script fails with WRONGTYPE
        // before it writes anything.
        await admin.multi().rename(leaseKey, `${leaseKey}:aside`).set(leaseKey, 'not a hash').exec();
        await expect(holder.complete(turn)).rejects.toThrow(/WRONGTYPE/);
        await admin.rename(`${leaseKey}:aside`, leaseKey);

        // Renewals go on for the replica, not for the turn.
        clock.advance(5_000);
        await eventually(async () => (await heartbeat()) === clock.now() + leaseMs, 5000, 'a renewal');
        expect(Number(await admin.zscore(`{${pools.prefix}}:leases`, turn.lease.token))).toBe(
          clock.now() - 5_000 + leaseMs,
        );
        clock.advance(leaseMs - 5_000);
        const other = await pools.open({ now: clock.now });
        expect((await other.claim())?.id).toBe(turn.id);
        expect(
          logger.lines.some(
            (line) => line.level === 'error' && line.message.startsWith('settlement failed for good'),
          ),
        ).toBe(true);
      } finally {
        admin.disconnect();
      }
    });
  });

  // A lease written by a build whose leases did not keep their messages has no `messages` field: a
  // replica of this build settling it during a rolling upgrade reads the messages back.
  describe('when a lease was written without its messages field', () => {
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
          expect((await pool.claim())?.session).toBe('A');
        } finally {
          admin.disconnect();
        }
      });
    }
  });
});
