import { describe, expect, it } from 'vitest';
import type { MessageStatus, MessageStatusStore } from '../ports/message-status-store.js';
import { type StoreFactory, useStoreUnderTest } from './store-harness.js';

const TTL_MS = 24 * 60 * 60 * 1000;

function status(id: string, overrides: Partial<MessageStatus> = {}): MessageStatus {
  return {
    id,
    status: 'queued',
    pipeline: 'assistant',
    rule: null,
    turn: null,
    trace_id: null,
    replies: [],
    error: null,
    updated_at: Date.UTC(2025, 0, 1),
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
      it('returns each as put, replies included', async () => {
        const completed = status('m1', {
          status: 'completed',
          rule: 'support-group',
          turn: 't1',
          replies: [{ text: 'hello' }, { text: 'ünïcødé ✓' }],
        });
        const failed = status('m2', { status: 'dead_lettered', error: 'SB_PIPELINE_FAILED: 400' });
        await subject.store.put(completed);
        await subject.store.put(failed);
        expect(await subject.store.get('m1')).toEqual(completed);
        expect(await subject.store.get('m2')).toEqual(failed);
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

      it('keeps the newer status when an older one is put after it', async () => {
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

    describe('when an idempotency key is claimed', () => {
      it('binds it the first time and returns the bound id afterwards', async () => {
        expect(await subject.store.claimIdempotencyKey('key-1', 'm1', TTL_MS)).toBeNull();
        expect(await subject.store.claimIdempotencyKey('key-1', 'm2', TTL_MS)).toBe('m1');
        expect(await subject.store.claimIdempotencyKey('key-2', 'm2', TTL_MS)).toBeNull();
      });

      it('lets exactly one of several concurrent claims bind it', async () => {
        const results = await Promise.all(
          ['m1', 'm2', 'm3', 'm4'].map((id) => subject.store.claimIdempotencyKey('key-1', id, TTL_MS)),
        );
        const winners = ['m1', 'm2', 'm3', 'm4'].filter((_, index) => results[index] === null);
        expect(winners).toHaveLength(1);
        expect(results.filter((result) => result !== null)).toEqual([winners[0], winners[0], winners[0]]);
      });

      it('binds it anew once its TTL has passed', async () => {
        await subject.store.claimIdempotencyKey('key-1', 'm1', 1000);
        subject.advance(999);
        expect(await subject.store.claimIdempotencyKey('key-1', 'm2', 1000)).toBe('m1');
        subject.advance(1);
        expect(await subject.store.claimIdempotencyKey('key-1', 'm2', 1000)).toBeNull();
        expect(await subject.store.claimIdempotencyKey('key-1', 'm3', 1000)).toBe('m2');
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
        await subject.store.claimIdempotencyKey('expired', 'm1', 1000);
        await subject.store.claimIdempotencyKey('live', 'm2', TTL_MS);
        subject.advance(1000);
        await subject.store.prune(subject.now());
        expect(await subject.store.claimIdempotencyKey('live', 'm3', TTL_MS)).toBe('m2');
        expect(await subject.store.claimIdempotencyKey('expired', 'm3', TTL_MS)).toBeNull();
      });
    });

    describe('when the store is reopened', () => {
      it('still holds statuses and bound keys', async (context) => {
        const completed = status('m1', { status: 'completed', replies: [{ text: 'hi' }] });
        await subject.store.put(completed);
        await subject.store.claimIdempotencyKey('key-1', 'm1', TTL_MS);
        const reopened = await subject.reopen();
        if (reopened === null) return context.skip('not durable');
        expect(await reopened.get('m1')).toEqual(completed);
        expect(await reopened.claimIdempotencyKey('key-1', 'm2', TTL_MS)).toBe('m1');
      });
    });
  });
}
