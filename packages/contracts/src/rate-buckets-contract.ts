import { describe, expect, it } from 'vitest';
import { MAX_BUCKETS_PER_TAKE, type RateBucket, type RateBuckets } from '@switchboard/core';
import { type StoreFactory, useStoreUnderTest } from './store-harness.js';

const perSecond = (key: string, limit: number): RateBucket => ({ key, limit, perMs: 1000, burst: limit });

/**
 * The behaviour every `RateBuckets` must show (ports/rate-buckets.ts); run it once per
 * implementation. The factory's buckets read time from the suite's clock.
 */
export function rateBucketsContract(name: string, factory: StoreFactory<RateBuckets>): void {
  describe(`RateBuckets contract: ${name}`, () => {
    const subject = useStoreUnderTest(factory);
    const takeAll = async (buckets: RateBucket[], count: number) => {
      const waits: number[] = [];
      for (let i = 0; i < count; i += 1) waits.push(await subject.store.take(buckets));
      return waits;
    };

    describe('when a bucket is new', () => {
      it('gives a burst of limit tokens, then says to wait one interval', async () => {
        const bot = perSecond('tg:bot', 4);
        expect(await takeAll([bot], 5)).toEqual([0, 0, 0, 0, 250]);
      });
    });

    describe('when a bucket is smaller than its limit', () => {
      it('gives burst tokens at once, then one per interval', async () => {
        const bot = { key: 'tg:bot', limit: 30, perMs: 1000, burst: 1 };
        expect(await takeAll([bot], 2)).toEqual([0, 34]);
        subject.advance(34);
        expect(await takeAll([bot], 2)).toEqual([0, 34]);
        subject.advance(10_000);
        const big = { key: 'tg:chat:1', limit: 2, perMs: 1000, burst: 3 };
        expect(await takeAll([big], 4)).toEqual([0, 0, 0, 500]);
      });
    });

    describe('when a bucket is empty', () => {
      it('gives one token back per interval, never more than limit', async () => {
        const chat = { key: 'tg:group:-1', limit: 20, perMs: 60_000, burst: 20 };
        await takeAll([chat], 20);
        expect(await subject.store.take([chat])).toBe(3000);
        subject.advance(2999);
        expect(await subject.store.take([chat])).toBe(1);
        subject.advance(1);
        expect(await takeAll([chat], 2)).toEqual([0, 3000]);
        subject.advance(10 * 60_000);
        expect(await takeAll([chat], 21)).toEqual([...Array<number>(20).fill(0), 3000]);
      });

      it('takes nothing while the caller waits', async () => {
        const chat = perSecond('tg:chat:1', 1);
        await subject.store.take([chat]);
        subject.advance(400);
        expect(await takeAll([chat], 3)).toEqual([600, 600, 600]);
        subject.advance(600);
        expect(await takeAll([chat], 2)).toEqual([0, 1000]);
      });

      it('counts fractional intervals exactly: 30 a second is 30 a second', async () => {
        const bot = perSecond('tg:bot', 30);
        let taken = 0;
        for (let ms = 0; ms <= 3000; ms += 50) {
          while ((await subject.store.take([bot])) === 0) taken += 1;
          subject.advance(50);
        }
        // A burst of 30, then 30 a second for the 3 s.
        expect(taken).toBeGreaterThanOrEqual(119);
        expect(taken).toBeLessThanOrEqual(120);
      });
    });

    describe('when a take is given back', () => {
      it('has the token again at once, in every bucket of the take, and never more than burst', async () => {
        const sender = { key: 'quota@acme:sender:60000:u1', limit: 3, perMs: 60_000, burst: 3 };
        const tenant = { key: 'quota@acme:tenant:60000:', limit: 5, perMs: 60_000, burst: 5 };
        expect(await takeAll([sender, tenant], 4)).toEqual([0, 0, 0, 20_000]);
        await subject.store.giveBack([sender, tenant]);
        expect(await takeAll([sender, tenant], 2)).toEqual([0, 20_000]);
        // Given back into a full bucket: it stays full, a burst of 3, not 4.
        subject.advance(10 * 60_000);
        await subject.store.giveBack([sender]);
        expect(await takeAll([sender], 4)).toEqual([0, 0, 0, 20_000]);
      });
    });

    describe('when a take names several buckets', () => {
      it('takes from all of them or from none, and waits for the emptiest', async () => {
        const bot = perSecond('tg:bot', 2);
        const chat1 = perSecond('tg:chat:1', 1);
        const chat2 = perSecond('tg:chat:2', 1);
        expect(await subject.store.take([bot, chat1])).toBe(0);
        // Chat 1 is empty: its wait is the answer, and the bot keeps its last token.
        expect(await subject.store.take([bot, chat1])).toBe(1000);
        expect(await subject.store.take([bot, chat2])).toBe(0);
        // Now the bot is empty too: chat 2 would have to wait for both.
        expect(await subject.store.take([bot, chat2])).toBe(1000);
        subject.advance(500);
        expect(await subject.store.take([bot, chat1])).toBe(500);
        subject.advance(500);
        expect(await subject.store.take([bot, chat1])).toBe(0);
      });

      it('names the buckets that refused an attempt, by their index, and takes from none', async () => {
        const sender = perSecond('quota@acme:sender:1000:a', 1);
        const session = perSecond('quota@acme:session:1000:s', 2);
        const tenant = perSecond('quota@acme:tenant:1000:', 3);
        expect(await subject.store.attempt([sender, session, tenant])).toEqual({ waitMs: 0, short: [] });
        expect(await subject.store.attempt([sender, session, tenant])).toEqual({ waitMs: 1000, short: [0] });
        // Nothing went from the session or the tenant: their tokens are all there.
        expect(await subject.store.attempt([session, tenant])).toEqual({ waitMs: 0, short: [] });
        expect(await subject.store.attempt([tenant, session])).toEqual({ waitMs: 500, short: [1] });
        subject.advance(1000);
        expect(await subject.store.attempt([sender, session, tenant])).toEqual({ waitMs: 0, short: [] });
      });

      it('takes from as many as MAX_BUCKETS_PER_TAKE buckets at once', async () => {
        const buckets = Array.from({ length: MAX_BUCKETS_PER_TAKE }, (_, index) =>
          perSecond(`k:${index}`, 1),
        );
        expect(await subject.store.take(buckets)).toBe(0);
        expect(await subject.store.attempt(buckets)).toEqual({
          waitMs: 1000,
          short: buckets.map((_, index) => index),
        });
      });

      it('keeps buckets of other keys apart', async () => {
        await takeAll([perSecond('a:chat:1', 1)], 1);
        expect(await subject.store.take([perSecond('a:chat:2', 1)])).toBe(0);
        expect(await subject.store.take([perSecond('b:chat:1', 1)])).toBe(0);
      });
    });

    describe('when callers take at the same moment', () => {
      it('gives each token to exactly one of them', async () => {
        const chat = perSecond('tg:chat:1', 3);
        const waits = await Promise.all(Array.from({ length: 10 }, () => subject.store.take([chat])));
        expect(waits.filter((wait) => wait === 0)).toHaveLength(3);
      });
    });
  });
}
