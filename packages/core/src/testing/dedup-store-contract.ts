import { describe, expect, it } from 'vitest';
import type { DedupStore } from '../ports/dedup-store.js';
import { type StoreFactory, useStoreUnderTest } from './store-harness.js';

const TTL_MS = 60_000;

/** The behaviour every `DedupStore` must show (ports/dedup-store.ts); run it once per implementation. */
export function dedupStoreContract(name: string, factory: StoreFactory<DedupStore>): void {
  describe(`DedupStore contract: ${name}`, () => {
    const subject = useStoreUnderTest(factory);

    describe('when a key is delivered twice within its TTL', () => {
      it('is first only the first time', async () => {
        expect(await subject.store.firstSeen('telegram:tg:1', TTL_MS)).toBe(true);
        expect(await subject.store.firstSeen('telegram:tg:1', TTL_MS)).toBe(false);
        subject.advance(TTL_MS - 1);
        expect(await subject.store.firstSeen('telegram:tg:1', TTL_MS)).toBe(false);
      });

      it('keeps keys apart', async () => {
        expect(await subject.store.firstSeen('telegram:tg:1', TTL_MS)).toBe(true);
        expect(await subject.store.firstSeen('telegram:tg:2', TTL_MS)).toBe(true);
        expect(await subject.store.firstSeen('slack:tg:1', TTL_MS)).toBe(true);
      });

      it('lets exactly one of several concurrent deliveries be first', async () => {
        const results = await Promise.all(
          Array.from({ length: 10 }, () => subject.store.firstSeen('discord:dc:9', TTL_MS)),
        );
        expect(results.filter(Boolean)).toHaveLength(1);
      });
    });

    describe('when the TTL has passed', () => {
      it('counts the key as first again, for a new TTL', async () => {
        await subject.store.firstSeen('slack:sl:Ev1', TTL_MS);
        subject.advance(TTL_MS);
        expect(await subject.store.firstSeen('slack:sl:Ev1', 1000)).toBe(true);
        subject.advance(999);
        expect(await subject.store.firstSeen('slack:sl:Ev1', 1000)).toBe(false);
        subject.advance(1);
        expect(await subject.store.firstSeen('slack:sl:Ev1', 1000)).toBe(true);
      });

      it('still remembers keys whose TTL has not passed', async () => {
        await subject.store.firstSeen('short', 1000);
        await subject.store.firstSeen('long', TTL_MS);
        subject.advance(5000);
        expect(await subject.store.firstSeen('short', TTL_MS)).toBe(true);
        expect(await subject.store.firstSeen('long', TTL_MS)).toBe(false);
      });
    });

    describe('when a key is forgotten', () => {
      it('counts its next delivery as first', async () => {
        await subject.store.firstSeen('openapi:api:k', TTL_MS);
        await subject.store.forget('openapi:api:k');
        expect(await subject.store.firstSeen('openapi:api:k', TTL_MS)).toBe(true);
      });

      it('ignores a key it never saw', async () => {
        await subject.store.forget('never-seen');
        expect(await subject.store.firstSeen('never-seen', TTL_MS)).toBe(true);
      });
    });

    describe('when the store is reopened', () => {
      it('still remembers keys within their TTL', async (context) => {
        await subject.store.firstSeen('telegram:tg:5', TTL_MS);
        const reopened = await subject.reopen();
        if (reopened === null) return context.skip('not durable');
        expect(await reopened.firstSeen('telegram:tg:5', TTL_MS)).toBe(false);
      });
    });
  });
}
