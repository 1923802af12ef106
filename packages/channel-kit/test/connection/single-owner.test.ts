import {
  type ChannelAdapter,
  type ChannelLeases,
  SwitchboardError,
  createMemoryChannelLeases,
  silentLogger,
} from '@switchboard/core';
import { recordingIngress } from '@switchboard/contracts';
import { eventually } from '@switchboard/testkit/eventually';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { type OwnedChannels, ownChannels } from '../../src/connection/single-owner.js';

/** Short leases, so that expiry and fencing happen within a test. */
const TIMING = { leaseMs: 600, renewEveryMs: 100, fenceAfterMs: 300 };

/** When each event of `connection` last happened (ms): read, not the moment a poll noticed it. */
const happenedAt = new Map<string, number>();

/** A single-consumer adapter of replica `name` that writes its starts and stops to `events`. */
function connection(name: string, events: string[]): ChannelAdapter {
  let running = false;
  return {
    id: 'tg',
    type: 'telegram',
    singleConsumer: true,
    async start() {
      running = true;
      events.push(`${name} start`);
    },
    async stop() {
      running = false;
      events.push(`${name} stop`);
      happenedAt.set(`${name} stop`, Date.now());
    },
    async send() {},
    health: () => (running ? { ready: true } : { ready: false, detail: 'stopped' }),
  };
}

/** Leases whose calls fail while `cut.off` (the replica lost Redis). */
function cuttable(leases: ChannelLeases) {
  const cut = { off: false };
  const unreachable = () => new SwitchboardError('SB_STORE_UNAVAILABLE', { message: 'redis is unreachable' });
  const wrapped: ChannelLeases = {
    ...leases,
    renew: (lease, ttlMs) => (cut.off ? Promise.reject(unreachable()) : leases.renew(lease, ttlMs)),
    acquire: (channel, holder, ttlMs) =>
      cut.off ? Promise.reject(unreachable()) : leases.acquire(channel, holder, ttlMs),
  };
  return { leases: wrapped, cut };
}

/** With fake timers: moves the clock 10 ms at a time until `condition` holds, for at most 10 s. */
async function advanceUntil(condition: () => boolean): Promise<void> {
  for (let elapsed = 0; !condition(); elapsed += 10) {
    if (elapsed >= 10_000) throw new Error('condition not met within 10 s of fake time');
    await vi.advanceTimersByTimeAsync(10);
  }
}

describe('ownChannels', () => {
  const started: OwnedChannels[] = [];
  const { ingress } = recordingIngress(async () => ({ status: 'duplicate' }));
  afterEach(async () => {
    await Promise.all(
      started.splice(0).flatMap((owned) => [...owned.adapters.values()].map((a) => a.stop())),
    );
  });

  async function replica(name: string, leases: ChannelLeases, events: string[], timing = TIMING) {
    const owned = ownChannels(new Map([['tg', connection(name, events)]]), {
      leases,
      replicaId: name,
      logger: silentLogger,
      timing,
    });
    started.push(owned);
    const channel = owned.adapters.get('tg') as ChannelAdapter;
    await channel.start({ ingress, logger: silentLogger });
    return { owned, channel, role: () => owned.owned.get('tg')?.role() };
  }

  describe('when two replicas share the leases', () => {
    it('runs the connection on the first only; the second is standby and ready, naming the holder', async () => {
      const leases = createMemoryChannelLeases();
      const events: string[] = [];
      const a = await replica('a', leases, events);
      const b = await replica('b', leases, events);
      expect(events).toEqual(['a start']);
      expect([a.role(), b.role()]).toEqual(['active', 'standby']);
      expect(b.channel.health()).toEqual({ ready: true, detail: 'standby: replica a holds the lease' });
      expect(await b.owned.holders()).toEqual([
        {
          id: 'tg',
          type: 'telegram',
          role: 'standby',
          lease: expect.objectContaining({ holder: 'a', epoch: 1 }),
        },
      ]);
    });
  });

  describe('when the holder can no longer renew', () => {
    it('stops its connection after fenceAfterMs, before another replica starts one past the deadline', async () => {
      const shared = createMemoryChannelLeases();
      const events: string[] = [];
      const { leases, cut } = cuttable(shared);
      await replica('a', leases, events);
      const b = await replica('b', shared, events);
      cut.off = true;
      await eventually(() => events.includes('b start'), 5_000);
      expect(events).toEqual(['a start', 'a stop', 'b start']);
      expect(b.role()).toBe('active');
      expect((await shared.holders())[0]).toMatchObject({ holder: 'b', epoch: 2 });
    });
  });

  describe('when the connection takes longer to start than fenceAfterMs', () => {
    it('renews the lease meanwhile: the connection starts once and is never fenced', async () => {
      const leases = createMemoryChannelLeases();
      const events: string[] = [];
      const slow = connection('a', events);
      const startOnce = slow.start;
      slow.start = async (context) => {
        await new Promise((resolve) => setTimeout(resolve, TIMING.fenceAfterMs * 2));
        await startOnce(context);
      };
      const owned = ownChannels(new Map([['tg', slow]]), {
        leases,
        replicaId: 'a',
        logger: silentLogger,
        timing: TIMING,
      });
      started.push(owned);
      await owned.adapters.get('tg')?.start({ ingress, logger: silentLogger });
      const b = await replica('b', leases, events);
      // Two more lease lengths: a lapsed lease would have been taken by b, a fenced one restarted.
      const until = Date.now() + TIMING.leaseMs * 2;
      await eventually(() => Date.now() >= until, TIMING.leaseMs * 3);
      expect(events).toEqual(['a start']);
      expect(b.role()).toBe('standby');
      expect((await leases.holders())[0]).toMatchObject({ holder: 'a', epoch: 1 });
    });
  });

  describe('when a holder that took over mid-cycle loses the store', () => {
    it('stops its connection fenceAfterMs after its last renewal, not a renewal period later', async () => {
      // Fake timers: the moment of the stop is the measure, to the millisecond, however loaded
      // the machine. A long renewal period, as in production (a third of the lease): a fencing
      // check that waited for the next period would eat most of the margin.
      vi.useFakeTimers();
      try {
        const timing = { leaseMs: 1500, renewEveryMs: 500, fenceAfterMs: 700 };
        const shared = createMemoryChannelLeases();
        const events: string[] = [];
        const a = await replica('a', shared, events, timing);
        // b's renewal period starts mid-way through a's.
        await vi.advanceTimersByTimeAsync(150);
        const { leases, cut } = cuttable(shared);
        const b = await replica('b', leases, events, timing);
        a.channel.drain?.();
        await a.channel.stop();
        await advanceUntil(() => b.role() === 'active');
        const [held] = await shared.holders();
        const renewedAt = (held?.expiresAt ?? 0) - timing.leaseMs;
        cut.off = true;
        await advanceUntil(() => events.includes('b stop'));
        // Stopped before the lease could pass to anyone else, with the margin fencing promises.
        expect((happenedAt.get('b stop') ?? Number.POSITIVE_INFINITY) - renewedAt).toBe(timing.fenceAfterMs);
      } finally {
        vi.useRealTimers();
      }
    });
  });

  describe('when a standby cannot reach the store', () => {
    it('asks again at its own pace once the holder it last saw is past its deadline, not every few ms', async () => {
      const shared = createMemoryChannelLeases();
      const events: string[] = [];
      await replica('a', shared, events);
      let calls = 0;
      const { leases, cut } = cuttable(shared);
      const counted: ChannelLeases = {
        ...leases,
        acquire: (...args) => {
          calls += 1;
          return leases.acquire(...args);
        },
      };
      await replica('b', counted, events);
      cut.off = true;
      calls = 0;
      const from = Date.now();
      await eventually(() => Date.now() - from >= 2_000, 3_000);
      // Its renewal ticks (every renewEveryMs) and a second's retries; no spinning past the deadline.
      expect(calls).toBeLessThanOrEqual(2_000 / TIMING.renewEveryMs + 5);
    });
  });

  describe("when the store's clock is a minute behind the standby's", () => {
    it("asks at the standby pace, not every few ms: the holder's deadline reads long past here", async () => {
      const shared = createMemoryChannelLeases();
      const events: string[] = [];
      await replica('a', shared, events);
      let calls = 0;
      // Deadlines are the store's: read on this host's clock, a live one is a minute past.
      const behind: ChannelLeases = {
        ...shared,
        acquire: async (...args) => {
          calls += 1;
          const lease = await shared.acquire(...args);
          return { ...lease, expiresAt: lease.expiresAt - 60_000 };
        },
      };
      await replica('b', behind, events);
      calls = 0;
      const from = Date.now();
      await eventually(() => Date.now() - from >= 1_000, 2_000);
      expect(events).toEqual(['a start']);
      // Its renewal ticks (every renewEveryMs) and a second's retries.
      expect(calls).toBeLessThanOrEqual(1_000 / TIMING.renewEveryMs + 5);
    });
  });

  describe('when a renewal finds the lease gone', () => {
    it('stops the connection at once and stands by', async () => {
      const leases = createMemoryChannelLeases();
      const events: string[] = [];
      const a = await replica('a', leases, events);
      const [held] = await leases.holders();
      await leases.release(held as NonNullable<typeof held>);
      await leases.acquire('tg', 'c', TIMING.leaseMs);
      await eventually(() => events.includes('a stop'), 2_000);
      expect(a.role()).toBe('standby');
      await eventually(() => a.channel.health().detail === 'standby: replica c holds the lease', 2_000);
      expect(a.channel.health().ready).toBe(true);
    });
  });

  describe('when the holder drains', () => {
    it('stops the connection, then releases the lease, and a standby starts within a second', async () => {
      const leases = createMemoryChannelLeases();
      const events: string[] = [];
      const a = await replica('a', leases, events);
      await replica('b', leases, events);
      const drainedAt = Date.now();
      a.channel.drain?.();
      await a.channel.stop();
      expect(events).toEqual(['a start', 'a stop']);
      await eventually(() => events.includes('b start'), 2_000);
      expect(Date.now() - drainedAt).toBeLessThan(TIMING.leaseMs);
      expect((await leases.holders())[0]).toMatchObject({ holder: 'b', epoch: 2 });
    });
  });

  describe('when the connection fails to start after the lease was acquired on standby', () => {
    it('releases the lease, so that another replica may take it, and waits before trying again', async () => {
      const leases = createMemoryChannelLeases();
      const events: string[] = [];
      const a = await replica('a', leases, events);
      const failing = connection('b', events);
      failing.start = async () => {
        events.push('b failed');
        throw new SwitchboardError('SB_CHANNEL_AUTH_FAILED', { message: 'refused' });
      };
      const owned = ownChannels(new Map([['tg', failing]]), {
        leases,
        replicaId: 'b',
        logger: silentLogger,
        timing: TIMING,
      });
      started.push(owned);
      await owned.adapters.get('tg')?.start({ ingress, logger: silentLogger });
      a.channel.drain?.();
      await a.channel.stop();
      await eventually(() => events.includes('b failed'), 2_000);
      await eventually(async () => (await leases.holders()).length === 0, 2_000);
      expect(owned.owned.get('tg')?.role()).toBe('standby');
      expect(owned.adapters.get('tg')?.health()).toEqual({
        ready: true,
        detail: 'standby; the last start here failed: refused',
      });
      // Backoff: 1 s after the first failure, then 2 s.
      const failedAt = Date.now();
      await eventually(() => events.filter((event) => event === 'b failed').length === 2, 3_000);
      expect(Date.now() - failedAt).toBeGreaterThanOrEqual(800);
      await eventually(async () => (await leases.holders()).length === 0, 2_000);
      const c = await replica('c', leases, events);
      expect(c.role()).toBe('active');
    });
  });
});
