import { describe, expect, it } from 'vitest';
import type { ChannelLease, ChannelLeases } from '@switchboard/core';
import { type StoreFactory, useStoreUnderTest } from './store-harness.js';

/** A lease that outlives any test. */
const TTL_MS = 15_000;
/** A lease a test waits out. */
const SHORT_TTL_MS = 200;

/** Resolves once this host's clock is past `lease`'s deadline (the store under test shares it). */
async function pastDeadline(lease: ChannelLease): Promise<void> {
  while (Date.now() <= lease.expiresAt + 1) await new Promise((resolve) => setTimeout(resolve, 10));
}

/**
 * The behaviour every `ChannelLeases` must show (ports/channel-lease.ts); run it once per
 * implementation. Deadlines are the store's own, on its real clock (this host's, in tests): a
 * factory's leases ignore the suite's clock, and expiry is waited out on short leases.
 */
export function channelLeasesContract(name: string, factory: StoreFactory<ChannelLeases>): void {
  describe(`ChannelLeases contract: ${name}`, () => {
    const subject = useStoreUnderTest(factory);

    /** `acquire` or `renew`, with the deadline it must set: `ttlMs` after some moment of the call. */
    async function timed<T>(
      ttlMs: number,
      call: () => Promise<T>,
    ): Promise<{ answer: T; expiresAt: [number, number] }> {
      const before = Date.now();
      const answer = await call();
      return { answer, expiresAt: [before + ttlMs, Date.now() + ttlMs] };
    }

    describe('when a free lease is acquired', () => {
      it('goes to the caller with epoch 1 until ttlMs from now', async () => {
        const { answer: lease, expiresAt } = await timed(TTL_MS, () =>
          subject.store.acquire('tg', 'replica-a', TTL_MS),
        );
        expect(lease).toMatchObject({ channel: 'tg', holder: 'replica-a', epoch: 1 });
        expect(lease.expiresAt).toBeGreaterThanOrEqual(expiresAt[0]);
        expect(lease.expiresAt).toBeLessThanOrEqual(expiresAt[1]);
        expect(await subject.store.holders()).toEqual([lease]);
      });

      it('keeps channels apart', async () => {
        await subject.store.acquire('tg', 'replica-a', TTL_MS);
        const other = await subject.store.acquire('discord', 'replica-b', TTL_MS);
        expect(other).toMatchObject({ holder: 'replica-b', epoch: 1 });
        expect((await subject.store.holders()).map((lease) => [lease.channel, lease.holder])).toEqual([
          ['discord', 'replica-b'],
          ['tg', 'replica-a'],
        ]);
      });

      it('lets exactly one of several concurrent callers have it', async () => {
        const holders = ['a', 'b', 'c', 'd'];
        const answers = await Promise.all(
          holders.map((holder) => subject.store.acquire('tg', holder, TTL_MS)),
        );
        const winner = answers[0]?.holder;
        expect(answers.every((lease) => lease.holder === winner && lease.epoch === 1)).toBe(true);
      });
    });

    describe('when the lease is in force', () => {
      it("answers another caller with the holder's lease and changes nothing", async () => {
        const held = await subject.store.acquire('tg', 'replica-a', TTL_MS);
        expect(await subject.store.acquire('tg', 'replica-b', TTL_MS)).toEqual(held);
        expect(await subject.store.holders()).toEqual([held]);
      });

      it('passes to the next epoch when its holder acquires it again, gave up after a late renewal', async () => {
        const first = await subject.store.acquire('tg', 'replica-a', SHORT_TTL_MS);
        const { answer: again, expiresAt } = await timed(TTL_MS, () =>
          subject.store.acquire('tg', 'replica-a', TTL_MS),
        );
        expect(again).toMatchObject({ channel: 'tg', holder: 'replica-a', epoch: 2 });
        expect(await subject.store.renew(first, TTL_MS)).toBeNull();
        expect(again.expiresAt).toBeGreaterThanOrEqual(expiresAt[0]);
        expect(again.expiresAt).toBeLessThanOrEqual(expiresAt[1]);
        await pastDeadline(first);
        expect((await subject.store.acquire('tg', 'replica-b', TTL_MS)).holder).toBe('replica-a');
      });

      it('is extended by a renewal of its holder', async () => {
        const held = await subject.store.acquire('tg', 'replica-a', SHORT_TTL_MS);
        const { answer: renewed, expiresAt } = await timed(TTL_MS, () => subject.store.renew(held, TTL_MS));
        expect(renewed).toMatchObject({ channel: 'tg', holder: 'replica-a', epoch: held.epoch });
        expect(renewed?.expiresAt).toBeGreaterThanOrEqual(expiresAt[0]);
        expect(renewed?.expiresAt).toBeLessThanOrEqual(expiresAt[1]);
        await pastDeadline(held);
        expect((await subject.store.acquire('tg', 'replica-b', TTL_MS)).holder).toBe('replica-a');
      });
    });

    describe('when the lease expires', () => {
      it('passes to the next caller with the next epoch, and the old holder has lost it', async () => {
        const old = await subject.store.acquire('tg', 'replica-a', SHORT_TTL_MS);
        await pastDeadline(old);
        expect(await subject.store.holders()).toEqual([]);
        const taken = await subject.store.acquire('tg', 'replica-b', TTL_MS);
        expect(taken).toMatchObject({ holder: 'replica-b', epoch: 2 });
        expect(await subject.store.renew(old, TTL_MS)).toBeNull();
        expect(await subject.store.release(old)).toBe(false);
        expect(await subject.store.holders()).toEqual([taken]);
      });

      it('cannot be renewed by its holder, even before anyone took it over', async () => {
        const old = await subject.store.acquire('tg', 'replica-a', SHORT_TTL_MS);
        await pastDeadline(old);
        expect(await subject.store.renew(old, TTL_MS)).toBeNull();
        expect(await subject.store.acquire('tg', 'replica-a', TTL_MS)).toMatchObject({ epoch: 2 });
      });
    });

    describe('when the lease is released', () => {
      it('is free at once, and the next holder gets the next epoch', async () => {
        const held = await subject.store.acquire('tg', 'replica-a', TTL_MS);
        expect(await subject.store.release(held)).toBe(true);
        expect(await subject.store.holders()).toEqual([]);
        expect(await subject.store.acquire('tg', 'replica-b', TTL_MS)).toMatchObject({
          holder: 'replica-b',
          epoch: 2,
        });
      });

      it('counts epochs on for the same holder', async () => {
        await subject.store.release(await subject.store.acquire('tg', 'replica-a', TTL_MS));
        expect(await subject.store.acquire('tg', 'replica-a', TTL_MS)).toMatchObject({ epoch: 2 });
      });

      it('ignores a release or renewal naming an older epoch', async () => {
        const first = await subject.store.acquire('tg', 'replica-a', TTL_MS);
        await subject.store.release(first);
        const second = await subject.store.acquire('tg', 'replica-a', TTL_MS);
        expect(await subject.store.release(first)).toBe(false);
        expect(await subject.store.renew(first, TTL_MS)).toBeNull();
        expect(await subject.store.holders()).toEqual([second]);
      });
    });
  });
}
