import { describe, expect, it } from 'vitest';
import type { IdempotencyClaim, MessageStatus, MessageStatusStore } from '@switchboard/core';
import { type StoreFactory, messageStatusFixture as status, useStoreUnderTest } from './store-harness.js';

const TTL_MS = 24 * 60 * 60 * 1000;
/** How far ahead of the others the clock of a skewed writer runs. */
const SKEW_MS = 20_000;

/** A claim of `key` by the `api` channel's caller `key-a` for `messageId`, with a body 'body-1'. */
function claim(key: string, messageId: string, overrides: Partial<IdempotencyClaim> = {}): IdempotencyClaim {
  return {
    channel: 'api',
    credential: 'key-a',
    key,
    fingerprint: 'body-1',
    messageId,
    ttlMs: TTL_MS,
    ...overrides,
  };
}

/**
 * The behaviour every `MessageStatusStore` must show (ports/message-status-store.ts); run it once
 * per implementation.
 */
export function messageStatusStoreContract(name: string, factory: StoreFactory<MessageStatusStore>): void {
  describe(`MessageStatusStore contract: ${name}`, () => {
    const subject = useStoreUnderTest(factory);

    describe('when statuses are put', () => {
      it('returns each as put, its channel and replies included', async () => {
        const completed = status('m1', {
          tenant: 'acme',
          status: 'completed',
          rule: 'support-group',
          turn: 't1',
          replies: [{ text: 'hello' }, { text: 'ünïcødé ✓' }],
        });
        const failed = status('m2', {
          channel: 'api-2',
          status: 'dead_lettered',
          error: 'SB_PIPELINE_FAILED: 400',
        });
        await subject.store.put(completed);
        await subject.store.put(failed);
        expect(await subject.store.get('m1')).toEqual(completed);
        expect(await subject.store.get('m2')).toEqual(failed);
      });

      it('keeps the tenant of each, and reads one written before statuses named theirs as default', async () => {
        const acme = status('m1', { tenant: 'acme', status: 'completed' });
        await subject.store.put(acme);
        expect(await subject.store.get('m1')).toEqual(acme);
        const { tenant: _, ...withoutTenant } = status('m2', { tenant: 'acme', status: 'completed' });
        await subject.store.put(withoutTenant as MessageStatus);
        expect(await subject.store.get('m2')).toEqual({ ...withoutTenant, tenant: 'default' });
      });

      it('keeps the latest of several puts for one id', async () => {
        await subject.store.put(status('m1', { updated_at: 3 }));
        await subject.store.put(status('m1', { status: 'running', updated_at: 4 }));
        const done = status('m1', {
          status: 'completed',
          turn: 't1',
          replies: [{ text: 'ok' }],
          updated_at: 5,
        });
        await subject.store.put(done);
        expect(await subject.store.get('m1')).toEqual(done);
      });

      it('keeps a final status when a non-final one is put after it', async () => {
        const done = status('m1', { status: 'completed', updated_at: 20 });
        await subject.store.put(done);
        await subject.store.put(status('m1', { status: 'running', updated_at: 10 }));
        expect(await subject.store.get('m1')).toEqual(done);
      });

      it('keeps a final status when a non-final one of the same millisecond is put after it', async () => {
        const delivered = status('m1', {
          status: 'completed',
          replies: [{ text: 'ok' }],
          delivery: 'delivered',
          updated_at: 20,
        });
        await subject.store.put(delivered);
        await subject.store.put(status('m1', { status: 'completed', delivery: 'pending', updated_at: 20 }));
        await subject.store.put(status('m1', { status: 'running', updated_at: 20 }));
        expect(await subject.store.get('m1')).toEqual(delivered);
      });

      it('replaces a non-final status by a final one of the same millisecond', async () => {
        await subject.store.put(status('m1', { status: 'completed', delivery: 'pending', updated_at: 20 }));
        const delivered = status('m1', { status: 'completed', delivery: 'delivered', updated_at: 20 });
        await subject.store.put(delivered);
        expect(await subject.store.get('m1')).toEqual(delivered);
      });

      it('answers null for an id never put', async () => {
        expect(await subject.store.get('unknown')).toBeNull();
      });
    });

    describe("when writers' clocks disagree (a replica's clock runs ahead)", () => {
      const at = Date.UTC(2025, 0, 1);

      /** The final status, stamped by a clock on time. */
      const delivered = status('m1', {
        status: 'completed',
        replies: [{ text: 'ok' }],
        delivery: 'delivered',
        updated_at: at,
      });
      /** The status of the same message before its delivery ended, stamped by the skewed clock. */
      const skewedPending = status('m1', {
        status: 'completed',
        delivery: 'pending',
        updated_at: at + SKEW_MS,
      });

      it('keeps the final status over a pending one stamped later by the skewed clock', async () => {
        await subject.store.put(delivered);
        await subject.store.put(skewedPending);
        expect(await subject.store.get('m1')).toEqual(delivered);
      });

      it('replaces a pending status stamped by the skewed clock with the final one stamped earlier', async () => {
        await subject.store.put(skewedPending);
        await subject.store.put(delivered);
        expect(await subject.store.get('m1')).toEqual(delivered);
      });

      it('keeps a dead-letter reply appended to a final status over that status written again later', async () => {
        const deadLettered = status('m1', { status: 'dead_lettered', error: 'SB_PIPELINE_FAILED: 400' });
        const apologized = { ...deadLettered, replies: [{ text: 'sorry' }], updated_at: at };
        await subject.store.put({ ...deadLettered, updated_at: at - 5 });
        await subject.store.put(apologized);
        // The outcome's status again, held back (an outbox draining) and stamped by the skewed clock.
        await subject.store.put({ ...deadLettered, updated_at: at + SKEW_MS });
        expect(await subject.store.get('m1')).toEqual(apologized);
      });

      it("replaces a final status by its replay's final status, stamped earlier by a clock behind", async () => {
        await subject.store.put(
          status('m1', {
            status: 'dead_lettered',
            error: 'SB_PIPELINE_FAILED: 503',
            updated_at: at + SKEW_MS,
          }),
        );
        const replayed = status('m1', {
          generation: 1,
          status: 'completed',
          replies: [{ text: 'ok' }],
          delivery: 'delivered',
          updated_at: at,
        });
        await subject.store.put(replayed);
        // The first run's status, held back and written late, does not undo the replay's.
        await subject.store.put(
          status('m1', {
            status: 'dead_lettered',
            replies: [{ text: 'sorry' }],
            updated_at: at + 2 * SKEW_MS,
          }),
        );
        expect(await subject.store.get('m1')).toEqual(replayed);
      });

      it("keeps a final status when a replay's non-final one is put after it", async () => {
        const deadLettered = status('m1', { status: 'dead_lettered', updated_at: at });
        await subject.store.put(deadLettered);
        await subject.store.put(
          status('m1', { generation: 1, status: 'completed', delivery: 'pending', updated_at: at + 1 }),
        );
        expect(await subject.store.get('m1')).toEqual(deadLettered);
      });
    });

    describe('when an idempotency key is claimed', () => {
      it('binds it the first time and returns the binding afterwards', async () => {
        expect(await subject.store.claimIdempotencyKey(claim('key-1', 'm1'))).toBeNull();
        expect(await subject.store.claimIdempotencyKey(claim('key-1', 'm2'))).toEqual({
          messageId: 'm1',
          fingerprint: 'body-1',
        });
        expect(await subject.store.claimIdempotencyKey(claim('key-2', 'm2'))).toBeNull();
      });

      it('returns the fingerprint it was bound with to a claim with another body', async () => {
        await subject.store.claimIdempotencyKey(claim('key-1', 'm1'));
        expect(
          await subject.store.claimIdempotencyKey(claim('key-1', 'm2', { fingerprint: 'body-2' })),
        ).toEqual({ messageId: 'm1', fingerprint: 'body-1' });
      });

      it('binds the same key of another credential or another channel to a message of its own', async () => {
        await subject.store.claimIdempotencyKey(claim('key-1', 'm1'));
        expect(
          await subject.store.claimIdempotencyKey(claim('key-1', 'm2', { credential: 'key-b' })),
        ).toBeNull();
        expect(
          await subject.store.claimIdempotencyKey(claim('key-1', 'm3', { channel: 'api-2' })),
        ).toBeNull();
        expect(
          await subject.store.claimIdempotencyKey(claim('key-1', 'm4', { credential: 'key-b' })),
        ).toEqual({ messageId: 'm2', fingerprint: 'body-1' });
        expect(await subject.store.claimIdempotencyKey(claim('key-1', 'm4', { channel: 'api-2' }))).toEqual({
          messageId: 'm3',
          fingerprint: 'body-1',
        });
        expect(await subject.store.claimIdempotencyKey(claim('key-1', 'm4'))).toEqual({
          messageId: 'm1',
          fingerprint: 'body-1',
        });
      });

      it('lets exactly one of several concurrent claims bind it', async () => {
        const results = await Promise.all(
          ['m1', 'm2', 'm3', 'm4'].map((id) =>
            subject.store.claimIdempotencyKey(claim('key-1', id, { fingerprint: `body-${id}` })),
          ),
        );
        const winners = ['m1', 'm2', 'm3', 'm4'].filter((_, index) => results[index] === null);
        expect(winners).toHaveLength(1);
        const bound = { messageId: winners[0], fingerprint: `body-${winners[0]}` };
        expect(results.filter((result) => result !== null)).toEqual([bound, bound, bound]);
      });

      it('binds it anew, with the new body, once its TTL has passed', async () => {
        await subject.store.claimIdempotencyKey(claim('key-1', 'm1', { ttlMs: 1000 }));
        subject.advance(999);
        expect(await subject.store.claimIdempotencyKey(claim('key-1', 'm2', { ttlMs: 1000 }))).toEqual({
          messageId: 'm1',
          fingerprint: 'body-1',
        });
        subject.advance(1);
        const renewed = claim('key-1', 'm2', { ttlMs: 1000, fingerprint: 'body-2' });
        expect(await subject.store.claimIdempotencyKey(renewed)).toBeNull();
        expect(await subject.store.claimIdempotencyKey(claim('key-1', 'm3', { ttlMs: 1000 }))).toEqual({
          messageId: 'm2',
          fingerprint: 'body-2',
        });
      });
    });

    describe('when old statuses are pruned', () => {
      it('deletes statuses updated before the cutoff and returns how many', async () => {
        for (const [id, updatedAt] of [
          ['m1', 100],
          ['m2', 200],
          ['m3', 300],
        ] as const) {
          await subject.store.put(status(id, { updated_at: updatedAt }));
        }
        expect(await subject.store.prune(300)).toBe(2);
        expect(await subject.store.get('m1')).toBeNull();
        expect(await subject.store.get('m2')).toBeNull();
        expect(await subject.store.get('m3')).toEqual(status('m3', { updated_at: 300 }));
        expect(await subject.store.prune(300)).toBe(0);
      });

      it('keeps idempotency keys within their TTL', async () => {
        await subject.store.claimIdempotencyKey(claim('expired', 'm1', { ttlMs: 1000 }));
        await subject.store.claimIdempotencyKey(claim('live', 'm2'));
        subject.advance(1000);
        await subject.store.prune(subject.now());
        expect(await subject.store.claimIdempotencyKey(claim('live', 'm3'))).toEqual({
          messageId: 'm2',
          fingerprint: 'body-1',
        });
        expect(await subject.store.claimIdempotencyKey(claim('expired', 'm3'))).toBeNull();
      });
    });

    describe('when the store is reopened', () => {
      it('still holds statuses and bound keys', async (context) => {
        const completed = status('m1', { status: 'completed', replies: [{ text: 'hi' }] });
        await subject.store.put(completed);
        await subject.store.claimIdempotencyKey(claim('key-1', 'm1'));
        const reopened = await subject.reopen();
        if (reopened === null) return context.skip('not durable');
        expect(await reopened.get('m1')).toEqual(completed);
        expect(await reopened.claimIdempotencyKey(claim('key-1', 'm2'))).toEqual({
          messageId: 'm1',
          fingerprint: 'body-1',
        });
      });
    });
  });
}
