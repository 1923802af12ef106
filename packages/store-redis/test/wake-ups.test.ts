import { randomUUID } from 'node:crypto';
import type { ClaimedTurn, Turn } from '@switchboard/core';
import { eventually } from '@switchboard/testkit/eventually';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FAIL_FAST_OPTIONS } from '../src/index.js';
import { poolKeysOf } from '../src/pool-keys.js';
import { REDIS_URL, manualClock, queued, redisReachable, usePools } from './redis-harness.js';

const reachable = await redisReachable();

/** Counts a pool's wake-ups from now on. */
function countWakeups(pool: { onRunnable(listener: () => void): () => void }): () => number {
  let wakeups = 0;
  pool.onRunnable(() => {
    wakeups += 1;
  });
  return () => wakeups;
}

describe.skipIf(!reachable)('wake-ups (pool/wake.lua, the runnable channel)', () => {
  const pools = usePools();
  let publisher: Redis;
  beforeAll(() => {
    publisher = new Redis(REDIS_URL);
  });
  afterAll(() => {
    publisher?.disconnect();
  });

  /** Opens a replica and keeps its subscriber connection, for `channelBarrier`. */
  async function openTapped(setup: Parameters<typeof pools.open>[0] = {}) {
    let subscriber: Redis | undefined;
    const pool = await pools.open({
      ...setup,
      createClient: (role) => {
        const client = new Redis(REDIS_URL, FAIL_FAST_OPTIONS);
        if (role === 'subscriber') subscriber = client;
        return client;
      },
    });
    return { pool, subscriber: subscriber as Redis };
  }

  /**
   * Publishes a marker on the runnable channel and waits until the replica's subscriber
   * connection has delivered it: every announcement published before (an echo, a wrong extra
   * wake-up) has then reached the pool. The pool counts the marker as one wake-up.
   */
  async function channelBarrier(subscriber: Redis): Promise<void> {
    const marker = `barrier:${randomUUID()}`;
    let seen = false;
    const onMessage = (_channel: string, message: string) => {
      if (message === marker) seen = true;
    };
    subscriber.on('message', onMessage);
    try {
      await publisher.publish(poolKeysOf(pools.prefix).runnableChannel, marker);
      await eventually(() => seen, 5000, 'the barrier marker delivered');
    } finally {
      subscriber.off('message', onMessage);
    }
  }

  describe('when one replica makes work claimable', () => {
    it('wakes its own listeners once and the other replicas through the channel', async () => {
      const clock = manualClock();
      const first = await openTapped({ now: clock.now });
      const second = await pools.open({ now: clock.now });
      const firstWakeups = countWakeups(first.pool);
      const secondWakeups = countWakeups(second);
      await first.pool.enqueue(queued('A', clock.now()));
      expect(firstWakeups()).toBe(1);
      await eventually(() => secondWakeups() === 1, 5000, 'the other replica woken');
      // The enqueuing replica's own announcement came back before the marker: it stayed ignored.
      await channelBarrier(first.subscriber);
      expect(firstWakeups()).toBe(2);
    });

    it('wakes nobody while nothing may run', async () => {
      const clock = manualClock();
      const concurrency = { global: 1, perSession: 1 };
      const first = await pools.open({ now: clock.now, concurrency });
      const second = await openTapped({ now: clock.now, concurrency });
      await first.enqueue(queued('A', clock.now()));
      const running = (await first.claim()) as Turn;
      const secondWakeups = countWakeups(second.pool);
      await first.enqueue(queued('B', clock.now()));
      await first.complete(running);
      // One wake-up for the freed slot, one for the marker: none for the enqueue behind it.
      await channelBarrier(second.subscriber);
      expect(secondWakeups()).toBe(2);
    });
  });

  describe('when the replica making work claimable claims it itself', () => {
    it('claims with the enqueue and wakes only itself for what stays claimable', async () => {
      const clock = manualClock();
      const first = await pools.open({ now: clock.now });
      const second = await openTapped({ now: clock.now });
      const a = queued('A', clock.now());
      await first.enqueue(a);
      // Its announcement delivered before the count starts.
      await channelBarrier(second.subscriber);
      const taken: ClaimedTurn[] = [];
      first.onClaimedAhead((turn) => taken.push(turn));
      const firstWakeups = countWakeups(first);
      const secondWakeups = countWakeups(second.pool);
      await first.enqueue(queued('B', clock.now()));
      // The oldest head, with B still claimable: the enqueuing replica claims it next.
      expect(taken.map((turn) => [turn.messages[0]?.message.id, turn.more])).toEqual([[a.message.id, true]]);
      expect(firstWakeups()).toBe(1);
      // The marker only.
      await channelBarrier(second.subscriber);
      expect(secondWakeups()).toBe(1);
      expect(await first.complete(taken[0] as ClaimedTurn)).toBe('settled');
    });

    it('takes the next turn with the completion and wakes only itself for what stays claimable', async () => {
      const clock = manualClock();
      const first = await pools.open({ now: clock.now });
      const second = await openTapped({ now: clock.now });
      for (const session of ['A', 'B', 'C']) await first.enqueue(queued(session, clock.now()));
      const running = (await first.claim()) as Turn;
      await channelBarrier(second.subscriber);
      const secondWakeups = countWakeups(second.pool);
      const next: ClaimedTurn[] = [];
      expect(await first.complete(running, [], { claimNext: (turn) => next.push(turn) })).toBe('settled');
      // C stays claimable: the completing replica claims it next.
      expect(next.map((turn) => [turn.session, turn.more])).toEqual([['B', true]]);
      await channelBarrier(second.subscriber);
      expect(secondWakeups()).toBe(1);
    });

    it('claims with an enqueue the slot a settlement under way frees, with no wake-up for a claim', async () => {
      const clock = manualClock();
      const first = await pools.open({ now: clock.now, concurrency: { global: 1, perSession: 1 } });
      await first.enqueue(queued('A', clock.now()));
      const running = (await first.claim()) as Turn;
      const taken: ClaimedTurn[] = [];
      first.onClaimedAhead((turn) => taken.push(turn));
      const wakeups = countWakeups(first);
      // Sent in this order on one connection: Redis frees A's slot (nothing else waits), then
      // takes the enqueue, which finds it free while A's lease is still held here.
      const completed = first.complete(running);
      const enqueued = first.enqueue(queued('B', clock.now()));
      expect(await completed).toBe('settled');
      expect((await enqueued).accepted).toBe(true);
      expect(taken.map((turn) => turn.session)).toEqual(['B']);
      expect(wakeups()).toBe(0);
    });

    it('claims in step alone whatever its enqueues under way may claim: Redis counts the slots', async () => {
      const clock = manualClock();
      const first = await pools.open({ now: clock.now, concurrency: { global: 2, perSession: 1 } });
      await first.enqueue(queued('A', clock.now()));
      expect((await first.claim())?.session).toBe('A');
      const taken: ClaimedTurn[] = [];
      first.onClaimedAhead((turn) => taken.push(turn));
      const wakeups = countWakeups(first);
      // Sent together: the first, behind A's running turn, claims nothing; the second takes the
      // free slot in its own step.
      await Promise.all([first.enqueue(queued('A', clock.now())), first.enqueue(queued('B', clock.now()))]);
      expect(taken.map((turn) => turn.session)).toEqual(['B']);
      expect(wakeups()).toBe(0);
    });

    /**
     * Two replicas sharing `global` slots, each having renewed since both joined: each counts two
     * live replicas, a share of half the slots. The first one's claims ahead go to `taken`.
     */
    async function openSharingPair(global: number) {
      const clock = manualClock();
      const setup = { now: clock.now, concurrency: { global, perSession: 1 }, renewEveryMs: 20 };
      const first = await pools.open(setup);
      const second = await openTapped(setup);
      const taken: ClaimedTurn[] = [];
      first.onClaimedAhead((turn) => taken.push(turn));
      const admin = new Redis(REDIS_URL);
      const heartbeat = async (id: string) => Number(await admin.zscore(`{${pools.prefix}}:replicas`, id));
      try {
        const joined = [await heartbeat(first.replicaId), await heartbeat(second.pool.replicaId)];
        clock.advance(1);
        await eventually(
          async () =>
            (await heartbeat(first.replicaId)) > (joined[0] as number) &&
            (await heartbeat(second.pool.replicaId)) > (joined[1] as number),
          5000,
          'a renewal of each replica',
        );
      } finally {
        admin.disconnect();
      }
      const enqueue = (session: string) => first.enqueue(queued(session, clock.now()));
      return { first, second: second.pool, taken, enqueue };
    }

    it('claims nothing in step past its share of the global slots, leaving it to the others', async () => {
      const { second, taken, enqueue } = await openSharingPair(2);
      await enqueue('A');
      expect(taken.map((turn) => turn.session)).toEqual(['A']);
      // Its renewals wake it too (every 20 ms): what counts is that the enqueue left B unclaimed.
      await enqueue('B');
      expect(taken.map((turn) => turn.session)).toEqual(['A']);
      expect((await second.claim())?.session).toBe('B');
    });

    it('counts the claims of the enqueues under way against its share', async () => {
      const { first, second, taken, enqueue } = await openSharingPair(4);
      await enqueue('A');
      // Sent together: each would claim, were the claims under way not counted.
      await Promise.all(['B', 'C', 'D'].map(enqueue));
      expect(taken.map((turn) => turn.session)).toEqual(['A', 'B']);
      expect(first.heldTurns).toBe(2);
      expect((await second.claim())?.session).toBe('C');
    });

    it('passes its share by no more than the settlements under way that claim a next turn', async () => {
      const { first, second, taken, enqueue } = await openSharingPair(4);
      for (const session of ['A', 'B', 'C']) await enqueue(session);
      // At its share of two: C waits for any replica.
      expect(taken.map((turn) => turn.session)).toEqual(['A', 'B']);
      const next: ClaimedTurn[] = [];
      const completed = first.complete(taken[0] as Turn, [], { claimNext: (turn) => next.push(turn) });
      const enqueued = Promise.all(['D', 'E'].map(enqueue));
      expect(await completed).toBe('settled');
      await enqueued;
      expect(next.map((turn) => turn.session)).toEqual(['C']);
      expect(taken.map((turn) => turn.session)).toEqual(['A', 'B', 'D']);
      expect((await second.claim())?.session).toBe('E');
    });

    it('counts no settlement as under way once it was answered', async () => {
      const { first, taken, enqueue } = await openSharingPair(4);
      await enqueue('A');
      await enqueue('B');
      expect(await first.complete(taken[0] as Turn)).toBe('settled');
      await enqueue('C');
      // At its share again, nothing under way: D stays unclaimed.
      await enqueue('D');
      expect(taken.map((turn) => turn.session)).toEqual(['A', 'B', 'C']);
    });

    it('wakes the others when it claims nothing: it is draining', async () => {
      const clock = manualClock();
      const first = await pools.open({ now: clock.now });
      const second = await openTapped({ now: clock.now });
      first.onClaimedAhead(() => {
        throw new Error('a draining replica claims nothing ahead');
      });
      first.close();
      const secondWakeups = countWakeups(second.pool);
      await first.enqueue(queued('A', clock.now()), undefined, { last: true });
      await channelBarrier(second.subscriber);
      expect(secondWakeups()).toBe(2);
      expect((await second.pool.claim())?.session).toBe('A');
    });
  });

  describe("when a tenant's turns wait behind its concurrency", () => {
    it('wakes nobody for them: a claim would find nothing', async () => {
      const clock = manualClock();
      const pool = await pools.open({
        now: clock.now,
        pipelines: [
          { id: 'p', tenant: 'acme' },
          { id: 'q', tenant: 'bravo' },
        ],
        tenants: [{ id: 'acme', maxConcurrency: 1, weight: 1, maxPending: Number.POSITIVE_INFINITY }],
      });
      await pool.enqueue(queued('A', clock.now()));
      expect(await pool.claim()).not.toBeNull();
      const wakeups = countWakeups(pool);
      await pool.enqueue(queued('B', clock.now()));
      expect(await pool.claim()).toBeNull();
      expect(wakeups()).toBe(0);
    });
  });

  describe('when a debounced run comes due', () => {
    it('wakes the listeners at its due time, without a claim', async () => {
      const pool = await pools.open({
        now: Date.now,
        pipelines: [{ id: 'p', aggregation: { enabled: true, delay: '200ms' } }],
      });
      const wakeups = countWakeups(pool);
      const enqueuedAt = Date.now();
      await pool.enqueue(queued('A', enqueuedAt));
      expect(wakeups()).toBe(0);
      await eventually(() => wakeups() === 1, 5000, 'the timer wake-up');
      expect(Date.now() - enqueuedAt).toBeGreaterThanOrEqual(200);
      expect((await pool.claim())?.session).toBe('A');
    });
  });

  describe('when a lease expires', () => {
    it('wakes a replica at the deadline its renewal reported, whose timer reclaims the turn', async () => {
      const holderClock = manualClock(Date.now());
      // The shortest lease the timing rules allow (fencing plus the 2 s command timeout first).
      const leases = { leaseMs: 2400, renewEveryMs: 100, fenceAfterMs: 300 };
      const holder = await pools.open({ now: holderClock.now, ...leases });
      const other = await pools.open({ now: Date.now, ...leases });
      await holder.enqueue(queued('A', Date.now()));
      const turn = (await holder.claim()) as Turn;
      const wakeups = countWakeups(other);
      // Waits behind the running turn: not claimable; the next renewal reports the lease deadline.
      await other.enqueue(queued('A', Date.now()));
      expect(wakeups()).toBe(0);
      await eventually(() => wakeups() > 0, 5000, 'the wake-up at the lease deadline');
      expect(await other.stats()).toMatchObject({ pending: 2, inflight: 0 });
      expect((await other.claim())?.id).toBe(turn.id);
    });
  });
});
