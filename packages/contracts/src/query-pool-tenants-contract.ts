import { type TestContext, afterEach, describe, expect, it } from 'vitest';
import {
  type Concurrency,
  PipelinePolicySchema,
  type QueryPool,
  type QueueLimits,
  type QueuedMessage,
  type TenantShare,
  type Turn,
  defaultTenantShare,
} from '@switchboard/core';
import { PoolsUnderTest, type QueryPoolFactory } from './query-pool-factory.js';
import { queuedMessageFixture } from './store-harness.js';

const CLOCK_START_MS = Date.UTC(2025, 0, 1);

/** Pipeline `id` of tenant `tenant` (none: the default tenant). */
const pipeline = (id: string, tenant?: string) => ({ ...PipelinePolicySchema.parse({ id }), tenant });

const share = (id: string, fields: Partial<TenantShare>): TenantShare => ({
  ...defaultTenantShare(id),
  ...fields,
});

interface PoolOptions {
  global?: number;
  maxPending?: number;
  concurrency?: Concurrency;
  limits?: QueueLimits;
  pipelines?: Array<ReturnType<typeof pipeline>>;
  tenants?: TenantShare[];
}

const countOf = (order: readonly string[], id: string) => order.filter((p) => p === id).length;

/**
 * The tenants' shares of a `QueryPool` (docs/design.md §10 "Fair shares"): a tenant's
 * `concurrency` caps its turns, competing tenants take free slots in proportion to their
 * `weight` (in slot time), and `max_pending` bounds what a tenant keeps waiting. Run by
 * `queryPoolContract`, so every implementation applies them alike.
 */
export function queryPoolTenantsContract(name: string, factory: QueryPoolFactory): void {
  describe(`${name} (QueryPool contract: tenant shares)`, () => {
    let nowMs = CLOCK_START_MS;
    let sequence = 0;
    const pools = new PoolsUnderTest();
    afterEach(async () => {
      await pools.closeAll();
      nowMs = CLOCK_START_MS;
    });

    /** Pipelines a-bot (tenant a), b-bot (tenant b) and echo (the default tenant) unless `pipelines` says. */
    async function pool(options: PoolOptions = {}): Promise<QueryPool> {
      const harness = await factory({
        now: () => nowMs,
        concurrency: options.concurrency ?? { global: options.global ?? 100, perSession: 1 },
        limits: options.limits ?? { maxPending: options.maxPending ?? 10_000, maxPendingPerSession: 500 },
        pipelines: options.pipelines ?? [pipeline('a-bot', 'a'), pipeline('b-bot', 'b'), pipeline('echo')],
        tenants: options.tenants,
      });
      return pools.add(harness);
    }

    const peerOf = (p: QueryPool, context: TestContext) => pools.peerOf(p, context);

    function queued(session: string, pipelineId: string): QueuedMessage {
      sequence += 1;
      const base = queuedMessageFixture(sequence);
      base.message.sender = { id: `sender-${session}`, is_bot: false };
      return { ...base, session, pipeline: pipelineId, attempt: 0, acceptedAt: nowMs };
    }

    /** Enqueues `count` messages for `pipelineId`, each in a session of its own. */
    async function offer(p: QueryPool, pipelineId: string, count: number, from = 0): Promise<void> {
      for (let i = from; i < from + count; i++) {
        const result = await p.enqueue(queued(`${pipelineId}-${i}`, pipelineId));
        expect(result.accepted).toBe(true);
      }
    }

    /** Claims `count` turns, completing each at once; returns their pipelines in claim order. */
    async function claimAndComplete(p: QueryPool, count: number): Promise<string[]> {
      const order: string[] = [];
      for (let i = 0; i < count; i++) {
        const turn = (await p.claim()) as Turn;
        order.push(turn.pipeline);
        await p.complete(turn);
      }
      return order;
    }

    /** Claims until nothing may run; returns the turns. */
    async function claimAll(p: QueryPool): Promise<Turn[]> {
      const held: Turn[] = [];
      for (let turn = await p.claim(); turn !== null; turn = await p.claim()) held.push(turn);
      return held;
    }

    /**
     * Runs the pool as a controller would for `turns` claims, every slot busy, each turn of
     * pipeline p lasting `durationMs[p]` on the pool's clock, then lets the turns still running
     * end; returns each pipeline's claims and slot time.
     */
    async function simulate(p: QueryPool, durationMs: Record<string, number>, turns: number) {
      const running: Array<{ turn: Turn; endsAt: number }> = [];
      const claims: Record<string, number> = {};
      const slotMs: Record<string, number> = {};
      let claimed = 0;
      const fill = async () => {
        for (const turn of await claimAll(p)) {
          const duration = durationMs[turn.pipeline] ?? 0;
          running.push({ turn, endsAt: nowMs + duration });
          claims[turn.pipeline] = (claims[turn.pipeline] ?? 0) + 1;
          slotMs[turn.pipeline] = (slotMs[turn.pipeline] ?? 0) + duration;
          claimed += 1;
        }
      };
      await fill();
      while (claimed < turns) {
        running.sort((x, y) => x.endsAt - y.endsAt);
        const next = running.shift();
        if (next === undefined) break;
        nowMs = Math.max(nowMs, next.endsAt);
        await p.complete(next.turn);
        await fill();
      }
      // The turns still running end too: the next run starts with every slot free.
      for (const { turn, endsAt } of running.sort((x, y) => x.endsAt - y.endsAt)) {
        nowMs = Math.max(nowMs, endsAt);
        await p.complete(turn);
      }
      return { claims, slotMs };
    }

    const shareOf = (slotMs: Record<string, number>, id: string, other: string) =>
      (slotMs[id] ?? 0) / ((slotMs[id] ?? 0) + (slotMs[other] ?? 0));

    describe('when two tenants compete for free slots', () => {
      it('gives them turns in proportion to their weights, whichever arrived first', async () => {
        const p = await pool({ tenants: [share('a', { weight: 1 }), share('b', { weight: 3 })] });
        // Tenant a's messages are all older than b's: oldest-head order alone would run a's first.
        await offer(p, 'a-bot', 40);
        await offer(p, 'b-bot', 40);
        const order = await claimAndComplete(p, 40);
        expect(countOf(order, 'a-bot')).toBe(10);
        expect(countOf(order, 'b-bot')).toBe(30);
      });

      it('alternates tenants of equal weight turn by turn', async () => {
        const p = await pool();
        await offer(p, 'a-bot', 10);
        await offer(p, 'b-bot', 10);
        const order = await claimAndComplete(p, 6);
        expect(order).toEqual(['a-bot', 'b-bot', 'a-bot', 'b-bot', 'a-bot', 'b-bot']);
      });
    });

    describe('when tenants’ turns overlap on several slots', () => {
      it('splits the slot time by weight (1:3 on 2 slots)', async () => {
        const p = await pool({ global: 2, tenants: [share('a', { weight: 1 }), share('b', { weight: 3 })] });
        await offer(p, 'a-bot', 200);
        await offer(p, 'b-bot', 400);
        const { slotMs } = await simulate(p, { 'a-bot': 100, 'b-bot': 100 }, 400);
        expect(shareOf(slotMs, 'a-bot', 'b-bot')).toBeGreaterThan(0.23);
        expect(shareOf(slotMs, 'a-bot', 'b-bot')).toBeLessThan(0.27);
      });

      it('charges slot time, not turns: a tenant of turns ten times longer gets as much time, not ten times', async () => {
        const p = await pool({ global: 3 });
        await offer(p, 'a-bot', 200);
        await offer(p, 'b-bot', 1000);
        const { claims, slotMs } = await simulate(p, { 'a-bot': 100, 'b-bot': 10 }, 600);
        expect(shareOf(slotMs, 'a-bot', 'b-bot')).toBeGreaterThan(0.45);
        expect(shareOf(slotMs, 'a-bot', 'b-bot')).toBeLessThan(0.55);
        expect(claims['b-bot']).toBeGreaterThan(8 * (claims['a-bot'] ?? 0));
      });

      it('gives a tenant of weight 1 beside one of weight 1000 about a thousandth of the time', async () => {
        const p = await pool({ global: 20, tenants: [share('b', { weight: 1000 })] });
        await offer(p, 'a-bot', 100);
        await offer(p, 'b-bot', 3100);
        const { slotMs } = await simulate(p, { 'a-bot': 100, 'b-bot': 100 }, 3000);
        expect(slotMs['a-bot'] ?? 0).toBeGreaterThan(0);
        expect((slotMs['a-bot'] ?? 0) / (slotMs['b-bot'] ?? 1)).toBeLessThan(0.01);
      });

      it('gives a freed slot to the tenant that used the least slot time, however many turns it ran', async () => {
        const p = await pool({ global: 4 });
        await offer(p, 'a-bot', 10);
        const long = [(await p.claim()) as Turn, (await p.claim()) as Turn, (await p.claim()) as Turn];
        expect(long.map((turn) => turn.pipeline)).toEqual(['a-bot', 'a-bot', 'a-bot']);
        // b runs many quick turns while a's three run for a second: more turns, less slot time.
        await offer(p, 'b-bot', 20);
        for (let i = 0; i < 10; i++) {
          nowMs += 10;
          const turn = (await p.claim()) as Turn;
          expect(turn.pipeline).toBe('b-bot');
          nowMs += 1;
          await p.complete(turn);
        }
        nowMs += 1000;
        await p.complete(long[0] as Turn);
        expect((await p.claim())?.pipeline).toBe('b-bot');
      });
    });

    describe('when a tenant was idle while another ran', () => {
      it('saves it no credit: it gets its share from its return on, not the time it missed', async () => {
        const p = await pool({ global: 1 });
        await offer(p, 'a-bot', 100);
        expect((await simulate(p, { 'a-bot': 100 }, 50)).claims).toEqual({ 'a-bot': 50 });
        await offer(p, 'b-bot', 40);
        const { claims } = await simulate(p, { 'a-bot': 100, 'b-bot': 100 }, 20);
        expect(claims['b-bot']).toBeGreaterThanOrEqual(9);
        expect(claims['b-bot']).toBeLessThanOrEqual(11);
      });
    });

    describe('when a tenant has a concurrency of its own', () => {
      it('never runs more of its turns at once, and leaves the other slots to the others', async () => {
        const p = await pool({ global: 5, tenants: [share('a', { maxConcurrency: 2 })] });
        await offer(p, 'a-bot', 10);
        const held = await claimAll(p);
        expect(held.map((turn) => turn.pipeline)).toEqual(['a-bot', 'a-bot']);

        await offer(p, 'b-bot', 10);
        held.push(...(await claimAll(p)));
        expect(
          countOf(
            held.map((turn) => turn.pipeline),
            'b-bot',
          ),
        ).toBe(3);

        // A freed slot of a's goes back to a: b holds the rest of the global limit.
        await p.complete(held[0] as Turn);
        expect((await p.claim())?.pipeline).toBe('a-bot');
        expect(await p.claim()).toBeNull();
      });

      it('holds it across replicas sharing the pool', async (context) => {
        const a = await pool({ global: 10, tenants: [share('a', { maxConcurrency: 2 })] });
        const b = await peerOf(a, context);
        await offer(a, 'a-bot', 3);
        await offer(b, 'a-bot', 3, 3);
        const first = (await a.claim()) as Turn;
        expect((await b.claim())?.pipeline).toBe('a-bot');
        // The tenant's two slots are taken, one on each replica.
        expect(await a.claim()).toBeNull();
        expect(await b.claim()).toBeNull();
        expect(await a.complete(first)).toBe('settled');
        expect((await b.claim())?.pipeline).toBe('a-bot');
        expect(await a.claim()).toBeNull();
      });

      it('gives its slot back when a lease expires and another replica reclaims the turn', async (context) => {
        const a = await pool({ global: 10, tenants: [share('a', { maxConcurrency: 1 })] });
        const b = await peerOf(a, context);
        await offer(a, 'a-bot', 2);
        const held = (await a.claim()) as Turn;
        expect(await b.claim()).toBeNull();
        nowMs = (held.lease.expiresAt as number) + 1;
        // The reclaimed turn runs again on b, in the one slot of tenant a.
        const again = (await b.claim()) as Turn;
        expect(again.id).toBe(held.id);
        expect(await b.claim()).toBeNull();
        expect(await a.complete(held)).toBe('lost');
        expect(await b.complete(again)).toBe('settled');
        expect((await b.claim())?.pipeline).toBe('a-bot');
        expect(await b.claim()).toBeNull();
      });
    });

    describe('when a tenant holds max_pending messages', () => {
      it('refuses its next with queue_full, and still accepts the other tenants’', async () => {
        const p = await pool({ tenants: [share('a', { maxPending: 3 })] });
        await offer(p, 'a-bot', 3);
        expect(await p.enqueue(queued('a-more', 'a-bot'))).toMatchObject({
          accepted: false,
          reason: 'queue_full',
        });
        await offer(p, 'b-bot', 5);
        // A claimed message no longer waits: its place is free again.
        await claimAndComplete(p, 1);
        await offer(p, 'a-bot', 1, 10);
        expect((await p.enqueue(queued('a-over', 'a-bot'))).accepted).toBe(false);
      });

      it('counts a message put back by a retry or an abandon as waiting again', async () => {
        const p = await pool({ tenants: [share('a', { maxPending: 3 })] });
        await offer(p, 'a-bot', 2);
        const first = (await p.claim()) as Turn;
        const second = (await p.claim()) as Turn;
        await offer(p, 'a-bot', 1, 10);
        await p.retry(first, 0);
        await p.abandon(second);
        // Three wait again, two of them put back: the tenant takes no more.
        expect((await p.enqueue(queued('a-over', 'a-bot'))).accepted).toBe(false);
        await claimAndComplete(p, 3);
        await offer(p, 'a-bot', 3, 20);
      });
    });

    describe('when there is one tenant', () => {
      it('claims the oldest head first, across its pipelines', async () => {
        const p = await pool({ pipelines: [pipeline('p'), pipeline('q')] });
        const order = ['q', 'p', 'q', 'q', 'p'];
        for (const [i, id] of order.entries()) await p.enqueue(queued(`s${i}`, id));
        expect(await claimAndComplete(p, 5)).toEqual(order);
      });
    });

    describe('when a reload changes the shares', () => {
      it('applies the new weights and caps to the next claims', async () => {
        const p = await pool({ global: 100 });
        await offer(p, 'a-bot', 50);
        await offer(p, 'b-bot', 50);
        await p.reconfigure({
          concurrency: { global: 100, perSession: 1 },
          limits: { maxPending: 10_000, maxPendingPerSession: 500 },
          pipelines: [pipeline('a-bot', 'a'), pipeline('b-bot', 'b'), pipeline('echo')],
          tenants: [share('a', { weight: 4 }), share('b', { maxConcurrency: 1 })],
        });
        const order = await claimAndComplete(p, 20);
        expect(countOf(order, 'a-bot')).toBe(16);
        const held = [await p.claim(), await p.claim(), await p.claim()];
        expect(
          countOf(
            held.map((turn) => turn?.pipeline ?? 'none'),
            'b-bot',
          ),
        ).toBe(1);
      });

      it('starts sharing turns that were running alone, and their end frees no slot they did not take', async () => {
        const tenants = [share('a', { maxConcurrency: 1 })];
        const limits = { maxPending: 10_000, maxPendingPerSession: 500 };
        const p = await pool({ global: 10, pipelines: [pipeline('a-bot'), pipeline('b-bot')] });
        await offer(p, 'a-bot', 4);
        const before = [(await p.claim()) as Turn, (await p.claim()) as Turn];
        // Tenants start to compete while two of a's turns run, counted against no tenant.
        const config = { concurrency: { global: 10, perSession: 1 }, limits, tenants };
        await p.reconfigure({ ...config, pipelines: [pipeline('a-bot', 'a'), pipeline('b-bot', 'b')] });
        const during = (await p.claim()) as Turn;
        expect(during.pipeline).toBe('a-bot');
        expect(await p.claim()).toBeNull();
        for (const turn of before) await p.complete(turn);
        // Their end gave back nothing: a's one slot is still held.
        expect(await p.claim()).toBeNull();
        await p.complete(during);
        expect((await p.claim())?.pipeline).toBe('a-bot');
      });
    });

    describe('when a reload stops the tenants competing and another starts it again', () => {
      it('leaves no count below nothing: a turn claimed while they competed is taken back once', async () => {
        const limits = { maxPending: 10_000, maxPendingPerSession: 500 };
        const concurrency = { global: 10, perSession: 1 };
        const competing = {
          concurrency,
          limits,
          pipelines: [pipeline('a-bot', 'a'), pipeline('b-bot', 'b')],
          tenants: [share('a', { maxPending: 2 })],
        };
        const p = await pool(competing);
        await offer(p, 'a-bot', 1);
        const turn = (await p.claim()) as Turn;
        await p.reconfigure({ concurrency, limits, pipelines: [pipeline('a-bot'), pipeline('b-bot')] });
        await p.abandon(turn);
        await claimAndComplete(p, 1);
        await p.reconfigure(competing);
        await offer(p, 'a-bot', 2, 10);
        expect((await p.enqueue(queued('a-over', 'a-bot'))).accepted).toBe(false);
      });
    });

    describe('after overflows, retries, abandons, a reload moving a pipeline and takeAll', () => {
      it('counts every tenant back to nothing: each accepts max_pending again and runs its concurrency', async () => {
        const tenants = [
          share('a', { maxConcurrency: 2, maxPending: 4 }),
          share('b', { maxConcurrency: 2, maxPending: 4 }),
        ];
        const base = {
          concurrency: { global: 10, perSession: 1 },
          limits: { maxPending: 10_000, maxPendingPerSession: 2 },
          tenants,
        };
        const p = await pool({ ...base, pipelines: [pipeline('a-bot', 'a'), pipeline('b-bot', 'b')] });
        // Overflow: a third message of one session pushes out the oldest.
        for (let i = 0; i < 3; i++) await p.enqueue(queued('same', 'a-bot'));
        await p.enqueue(queued('b1', 'b-bot'));
        await p.enqueue(queued('b2', 'b-bot'));
        const first = (await p.claim()) as Turn;
        const second = (await p.claim()) as Turn;
        await p.retry(first, 0);
        await p.abandon(second, { ran: false });
        // A reload gives a's pipeline to b while messages wait and a turn runs.
        const running = (await p.claim()) as Turn;
        await p.reconfigure({ ...base, pipelines: [pipeline('a-bot', 'b'), pipeline('b-bot', 'b')] });
        for (const turn of await claimAll(p)) await p.complete(turn);
        await p.complete(running);
        for (const turn of await claimAll(p)) await p.complete(turn);
        await p.reconfigure({ ...base, pipelines: [pipeline('a-bot', 'a'), pipeline('b-bot', 'b')] });

        for (const id of ['a-bot', 'b-bot']) {
          await offer(p, id, 4, 100);
          expect((await p.enqueue(queued(`${id}-over`, id))).accepted).toBe(false);
        }
        const turns = await claimAll(p);
        expect(turns.map((turn) => turn.pipeline).sort()).toEqual(['a-bot', 'a-bot', 'b-bot', 'b-bot']);

        // What takeAll takes no longer waits: each tenant has its whole max_pending again.
        await p.takeAll();
        for (const id of ['a-bot', 'b-bot']) await offer(p, id, 4, 200);
      });
    });
  });
}
