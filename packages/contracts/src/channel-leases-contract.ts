import { describe, expect, it } from 'vitest';
import type { ChannelLeases } from '@switchboard/core';
import { type StoreFactory, useStoreUnderTest } from './store-harness.js';

const TTL_MS = 15_000;

/**
 * The behaviour every `ChannelLeases` must show (ports/channel-lease.ts); run it once per
 * implementation. The factory's leases read time from the suite's clock.
 */
export function channelLeasesContract(name: string, factory: StoreFactory<ChannelLeases>): void {
  describe(`ChannelLeases contract: ${name}`, () => {
    const subject = useStoreUnderTest(factory);

    describe('when a free lease is acquired', () => {
      it('goes to the caller with epoch 1 until ttlMs from now', async () => {
        const lease = await subject.store.acquire('tg', 'replica-a', TTL_MS);
        expect(lease).toEqual({
          channel: 'tg',
          holder: 'replica-a',
          epoch: 1,
          expiresAt: subject.now() + TTL_MS,
        });
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
        subject.advance(TTL_MS - 1);
        expect(await subject.store.acquire('tg', 'replica-b', TTL_MS)).toEqual(held);
        expect(await subject.store.holders()).toEqual([held]);
      });

      it('is extended, epoch kept, when its holder acquires it again', async () => {
        await subject.store.acquire('tg', 'replica-a', TTL_MS);
        subject.advance(5000);
        const again = await subject.store.acquire('tg', 'replica-a', TTL_MS);
        expect(again).toEqual({
          channel: 'tg',
          holder: 'replica-a',
          epoch: 1,
          expiresAt: subject.now() + TTL_MS,
        });
      });

      it('is extended by a renewal of its holder', async () => {
        const held = await subject.store.acquire('tg', 'replica-a', TTL_MS);
        subject.advance(TTL_MS - 1);
        const renewed = await subject.store.renew(held, TTL_MS);
        expect(renewed).toEqual({ ...held, expiresAt: subject.now() + TTL_MS });
        subject.advance(TTL_MS - 1);
        expect((await subject.store.acquire('tg', 'replica-b', TTL_MS)).holder).toBe('replica-a');
      });
    });

    describe('when the lease expires', () => {
      it('passes to the next caller with the next epoch, and the old holder has lost it', async () => {
        const old = await subject.store.acquire('tg', 'replica-a', TTL_MS);
        subject.advance(TTL_MS);
        expect(await subject.store.holders()).toEqual([]);
        const taken = await subject.store.acquire('tg', 'replica-b', TTL_MS);
        expect(taken).toMatchObject({ holder: 'replica-b', epoch: 2 });
        expect(await subject.store.renew(old, TTL_MS)).toBeNull();
        expect(await subject.store.release(old)).toBe(false);
        expect(await subject.store.holders()).toEqual([taken]);
      });

      it('cannot be renewed by its holder, even before anyone took it over', async () => {
        const old = await subject.store.acquire('tg', 'replica-a', TTL_MS);
        subject.advance(TTL_MS);
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
