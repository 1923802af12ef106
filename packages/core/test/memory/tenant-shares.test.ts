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

function poolOf(options: { global?: number; tenants?: TenantShare[]; maxPending?: number }): QueryPool {
  return createMemoryQueryPool({
    concurrency: { global: options.global ?? 100, perSession: 1 },
    limits: { maxPending: options.maxPending ?? 10_000, maxPendingPerSession: 500 },
    pipelines: [pipeline('a-bot', 'a'), pipeline('b-bot', 'b'), pipeline('echo')],
    tenants: options.tenants,
  });
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

  describe('when one tenant’s turns are long and the other’s short', () => {
    it('gives a freed slot to the tenant holding the fewest, however many turns it ran', async () => {
      const pool = poolOf({ global: 4 });
      await offer(pool, 'a-bot', 10);
      const long = [(await pool.claim()) as Turn, (await pool.claim()) as Turn, (await pool.claim()) as Turn];
      expect(long.map((turn) => turn.pipeline)).toEqual(['a-bot', 'a-bot', 'a-bot']);
      // b runs many short turns meanwhile: more turns than a, but never more than one slot.
      await offer(pool, 'b-bot', 20);
      expect(countOf(await claimAndComplete(pool, 10), 'b-bot')).toBe(10);
      // A slot a frees goes to b, which holds none, not to a, which has run fewer turns.
      await pool.complete(long[0] as Turn);
      expect((await pool.claim())?.pipeline).toBe('b-bot');
    });
  });

  describe('when a tenant was idle while another ran', () => {
    it('saves it no credit: it gets its share from its return on, not the turns it missed', async () => {
      const pool = poolOf({});
      await offer(pool, 'a-bot', 60);
      expect(countOf(await claimAndComplete(pool, 50), 'a-bot')).toBe(50);
      await offer(pool, 'b-bot', 20);
      const order = await claimAndComplete(pool, 10);
      expect(countOf(order, 'b-bot')).toBe(5);
      expect(countOf(order, 'a-bot')).toBe(5);
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
});
