import { describe, expect, it } from 'vitest';
import {
  PipelinePolicySchema,
  type QueryPool,
  type TenantShare,
  type Turn,
  createMemoryQueryPool,
  defaultTenantShare,
} from '../../src/index.js';
import { queuedMessage } from '../harness.js';

// Tenants' shares of the memory pool (docs/design.md §10 "Fair shares"): a tenant's `concurrency`
// caps its turns, competing tenants take free slots in proportion to their `weight`, and
// `max_pending` bounds what a tenant keeps waiting.

/** Pipeline `id` of tenant `tenant` (none: `default`). */
const pipeline = (id: string, tenant?: string) => ({ ...PipelinePolicySchema.parse({ id }), tenant });

const share = (id: string, fields: Partial<TenantShare>): TenantShare => ({
  ...defaultTenantShare(id),
  ...fields,
});

/** The pools' clock: moved by the tests, never by the wall. */
const clock = { ms: 1_000_000 };

function poolOf(options: { global?: number; tenants?: TenantShare[]; maxPending?: number }): QueryPool {
  return createMemoryQueryPool({
    concurrency: { global: options.global ?? 100, perSession: 1 },
    limits: { maxPending: options.maxPending ?? 10_000, maxPendingPerSession: 500 },
    pipelines: [pipeline('a-bot', 'a'), pipeline('b-bot', 'b'), pipeline('echo')],
    tenants: options.tenants,
    now: () => clock.ms,
  });
}

/**
 * Runs the pool as a controller would for `turns` claims, every slot busy, each turn of pipeline
 * p lasting `durationMs[p]` on the pool's clock, then lets the turns still running end; returns
 * each pipeline's claims and slot time.
 */
async function simulate(pool: QueryPool, durationMs: Record<string, number>, turns: number) {
  const running: Array<{ turn: Turn; endsAt: number }> = [];
  const claims: Record<string, number> = {};
  const slotMs: Record<string, number> = {};
  let claimed = 0;
  const fill = async () => {
    for (let turn = await pool.claim(); turn !== null; turn = await pool.claim()) {
      const duration = durationMs[turn.pipeline] ?? 0;
      running.push({ turn, endsAt: clock.ms + duration });
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
    clock.ms = Math.max(clock.ms, next.endsAt);
    await pool.complete(next.turn);
    await fill();
  }
  // The turns still running end too: the next run starts with every slot free.
  for (const { turn, endsAt } of running.sort((x, y) => x.endsAt - y.endsAt)) {
    clock.ms = Math.max(clock.ms, endsAt);
    await pool.complete(turn);
  }
  return { claims, slotMs };
}

/** Enqueues `count` messages for `pipelineId`, each in a session of its own. */
async function offer(pool: QueryPool, pipelineId: string, count: number): Promise<void> {
  for (let i = 0; i < count; i++) {
    const result = await pool.enqueue(queuedMessage(`${pipelineId}-${i}`, `m${i}`, { pipeline: pipelineId }));
    expect(result.accepted).toBe(true);
  }
}

/** Claims `count` turns, completing each at once; returns their pipelines in claim order. */
async function claimAndComplete(pool: QueryPool, count: number): Promise<string[]> {
  const order: string[] = [];
  for (let i = 0; i < count; i++) {
    const turn = (await pool.claim()) as Turn;
    order.push(turn.pipeline);
    await pool.complete(turn);
  }
  return order;
}

const countOf = (order: readonly string[], id: string) => order.filter((p) => p === id).length;

describe('memory query pool: tenant shares', () => {
  describe('when two tenants compete for free slots', () => {
    it('gives them turns in proportion to their weights, whichever arrived first', async () => {
      const pool = poolOf({ tenants: [share('a', { weight: 1 }), share('b', { weight: 3 })] });
      // Tenant a's 100 messages are all older than b's: oldest-head order alone would run a's first.
      await offer(pool, 'a-bot', 100);
      await offer(pool, 'b-bot', 100);
      const order = await claimAndComplete(pool, 40);
      expect(countOf(order, 'a-bot')).toBe(10);
      expect(countOf(order, 'b-bot')).toBe(30);
    });

    it('alternates tenants of equal weight turn by turn', async () => {
      const pool = poolOf({});
      await offer(pool, 'a-bot', 10);
      await offer(pool, 'b-bot', 10);
      const order = await claimAndComplete(pool, 6);
      expect(order).toEqual(['a-bot', 'b-bot', 'a-bot', 'b-bot', 'a-bot', 'b-bot']);
    });
  });

  describe('when tenants’ turns overlap on several slots', () => {
    it('splits the slot time by weight (1:3 on 2 slots)', async () => {
      const pool = poolOf({ global: 2, tenants: [share('a', { weight: 1 }), share('b', { weight: 3 })] });
      await offer(pool, 'a-bot', 500);
      await offer(pool, 'b-bot', 500);
      const { slotMs } = await simulate(pool, { 'a-bot': 100, 'b-bot': 100 }, 400);
      const aShare = (slotMs['a-bot'] ?? 0) / ((slotMs['a-bot'] ?? 0) + (slotMs['b-bot'] ?? 0));
      expect(aShare).toBeGreaterThan(0.23);
      expect(aShare).toBeLessThan(0.27);
    });

    it('charges slot time, not turns: a tenant of turns ten times longer gets as much time, not ten times', async () => {
      const pool = poolOf({ global: 3 });
      await offer(pool, 'a-bot', 500);
      await offer(pool, 'b-bot', 2000);
      const { claims, slotMs } = await simulate(pool, { 'a-bot': 100, 'b-bot': 10 }, 1000);
      const aShare = (slotMs['a-bot'] ?? 0) / ((slotMs['a-bot'] ?? 0) + (slotMs['b-bot'] ?? 0));
      expect(aShare).toBeGreaterThan(0.45);
      expect(aShare).toBeLessThan(0.55);
      expect(claims['b-bot']).toBeGreaterThan(8 * (claims['a-bot'] ?? 0));
    });

    it('gives a tenant of weight 1 beside one of weight 1000 about a thousandth of the time', async () => {
      const pool = poolOf({ global: 20, tenants: [share('b', { weight: 1000 })] });
      await offer(pool, 'a-bot', 500);
      await offer(pool, 'b-bot', 5000);
      const { slotMs } = await simulate(pool, { 'a-bot': 100, 'b-bot': 100 }, 4000);
      expect((slotMs['a-bot'] ?? 0) / (slotMs['b-bot'] ?? 1)).toBeLessThan(0.01);
    });

    it('gives a freed slot to the tenant that used the least slot time, however many turns it ran', async () => {
      const pool = poolOf({ global: 4 });
      await offer(pool, 'a-bot', 10);
      const long = [(await pool.claim()) as Turn, (await pool.claim()) as Turn, (await pool.claim()) as Turn];
      expect(long.map((turn) => turn.pipeline)).toEqual(['a-bot', 'a-bot', 'a-bot']);
      // b runs many quick turns while a's three run for a second: more turns, less slot time.
      await offer(pool, 'b-bot', 20);
      for (let i = 0; i < 10; i++) {
        clock.ms += 10;
        const turn = (await pool.claim()) as Turn;
        expect(turn.pipeline).toBe('b-bot');
        clock.ms += 1;
        await pool.complete(turn);
      }
      clock.ms += 1000;
      await pool.complete(long[0] as Turn);
      expect((await pool.claim())?.pipeline).toBe('b-bot');
    });
  });

  describe('when a tenant was idle while another ran', () => {
    it('saves it no credit: it gets its share from its return on, not the time it missed', async () => {
      const pool = poolOf({ global: 1 });
      await offer(pool, 'a-bot', 100);
      expect((await simulate(pool, { 'a-bot': 100 }, 50)).claims).toEqual({ 'a-bot': 50 });
      await offer(pool, 'b-bot', 40);
      const { claims } = await simulate(pool, { 'a-bot': 100, 'b-bot': 100 }, 20);
      expect(claims['b-bot']).toBeGreaterThanOrEqual(9);
      expect(claims['b-bot']).toBeLessThanOrEqual(11);
    });
  });

  describe('when a tenant has a concurrency of its own', () => {
    it('never runs more of its turns at once, and leaves the other slots to the others', async () => {
      const pool = poolOf({ global: 5, tenants: [share('a', { maxConcurrency: 2 })] });
      await offer(pool, 'a-bot', 10);
      const held: Turn[] = [];
      for (let turn = await pool.claim(); turn !== null; turn = await pool.claim()) held.push(turn);
      expect(held.map((turn) => turn.pipeline)).toEqual(['a-bot', 'a-bot']);

      await offer(pool, 'b-bot', 10);
      for (let turn = await pool.claim(); turn !== null; turn = await pool.claim()) held.push(turn);
      expect(
        countOf(
          held.map((turn) => turn.pipeline),
          'b-bot',
        ),
      ).toBe(3);

      // A freed slot of a's goes back to a: b holds the rest of the global limit.
      await pool.complete(held[0] as Turn);
      expect((await pool.claim())?.pipeline).toBe('a-bot');
      expect(await pool.claim()).toBeNull();
    });
  });

  describe('when a tenant holds max_pending messages', () => {
    it('refuses its next with queue_full, and still accepts the other tenants’', async () => {
      const pool = poolOf({ tenants: [share('a', { maxPending: 3 })] });
      await offer(pool, 'a-bot', 3);
      expect(await pool.enqueue(queuedMessage('a-more', 'x', { pipeline: 'a-bot' }))).toMatchObject({
        accepted: false,
        reason: 'queue_full',
      });
      await offer(pool, 'b-bot', 5);
      // A claimed message no longer waits: its place is free again.
      await claimAndComplete(pool, 1);
      await offer(pool, 'a-bot', 1);
    });
  });

  describe('when there is one tenant', () => {
    it('claims the oldest head first, across its pipelines', async () => {
      const pool = createMemoryQueryPool({
        concurrency: { global: 100, perSession: 1 },
        limits: { maxPending: 100, maxPendingPerSession: 100 },
        pipelines: [pipeline('p'), pipeline('q')],
      });
      const order = ['q', 'p', 'q', 'q', 'p'];
      for (const [i, id] of order.entries())
        await pool.enqueue(queuedMessage(`s${i}`, `m${i}`, { pipeline: id }));
      expect(await claimAndComplete(pool, 5)).toEqual(order);
    });
  });

  describe('when a reload changes the shares', () => {
    it('applies the new weights and caps to the next claims', async () => {
      const pool = poolOf({ global: 100 });
      await offer(pool, 'a-bot', 50);
      await offer(pool, 'b-bot', 50);
      await pool.reconfigure({
        concurrency: { global: 100, perSession: 1 },
        limits: { maxPending: 10_000, maxPendingPerSession: 500 },
        pipelines: [pipeline('a-bot', 'a'), pipeline('b-bot', 'b'), pipeline('echo')],
        tenants: [share('a', { weight: 4 }), share('b', { maxConcurrency: 1 })],
      });
      const order = await claimAndComplete(pool, 20);
      expect(countOf(order, 'a-bot')).toBe(16);
      const held = [await pool.claim(), await pool.claim(), await pool.claim()];
      expect(
        countOf(
          held.map((turn) => turn?.pipeline ?? 'none'),
          'b-bot',
        ),
      ).toBe(1);
    });
  });

  describe('after overflows, retries, abandons and a reload moving a pipeline', () => {
    it('counts every tenant back to nothing: each accepts max_pending again and runs its concurrency', async () => {
      const tenants = [
        share('a', { maxConcurrency: 2, maxPending: 4 }),
        share('b', { maxConcurrency: 2, maxPending: 4 }),
      ];
      const pool = createMemoryQueryPool({
        concurrency: { global: 10, perSession: 1 },
        limits: { maxPending: 10_000, maxPendingPerSession: 2 },
        pipelines: [pipeline('a-bot', 'a'), pipeline('b-bot', 'b')],
        tenants,
        now: () => clock.ms,
      });
      // Overflow: a third message of one session pushes out the oldest.
      for (const text of ['1', '2', '3'])
        await pool.enqueue(queuedMessage('same', text, { pipeline: 'a-bot' }));
      await pool.enqueue(queuedMessage('b1', 'x', { pipeline: 'b-bot' }));
      await pool.enqueue(queuedMessage('b2', 'y', { pipeline: 'b-bot' }));
      const first = (await pool.claim()) as Turn;
      const second = (await pool.claim()) as Turn;
      await pool.retry(first, 0);
      await pool.abandon(second, { ran: false });
      // A reload gives a's pipeline to b while messages wait and nothing runs.
      await pool.reconfigure({
        concurrency: { global: 10, perSession: 1 },
        limits: { maxPending: 10_000, maxPendingPerSession: 2 },
        pipelines: [pipeline('a-bot', 'b'), pipeline('b-bot', 'b')],
        tenants,
      });
      for (let turn = await pool.claim(); turn !== null; turn = await pool.claim()) await pool.complete(turn);
      await pool.reconfigure({
        concurrency: { global: 10, perSession: 1 },
        limits: { maxPending: 10_000, maxPendingPerSession: 2 },
        pipelines: [pipeline('a-bot', 'a'), pipeline('b-bot', 'b')],
        tenants,
      });

      for (const id of ['a-bot', 'b-bot']) {
        for (let i = 0; i < 4; i++)
          expect(
            (await pool.enqueue(queuedMessage(`${id}-again-${i}`, 'm', { pipeline: id }))).accepted,
          ).toBe(true);
        expect((await pool.enqueue(queuedMessage(`${id}-over`, 'm', { pipeline: id }))).accepted).toBe(false);
      }
      const running: string[] = [];
      for (let turn = await pool.claim(); turn !== null; turn = await pool.claim())
        running.push(turn.pipeline);
      expect(running.sort()).toEqual(['a-bot', 'a-bot', 'b-bot', 'b-bot']);

      // What takeAll takes no longer waits: each tenant has its whole max_pending again.
      await pool.takeAll();
      for (const id of ['a-bot', 'b-bot'])
        for (let i = 0; i < 4; i++)
          expect((await pool.enqueue(queuedMessage(`${id}-last-${i}`, 'm', { pipeline: id }))).accepted).toBe(
            true,
          );
    });
  });
});
