import { describe, expect, it } from 'vitest';
import type { Journal } from '@switchboard/core';
import { queuedMessageFixture, type StoreFactory, useStoreUnderTest } from './store-harness.js';

const KEY_TTL_MS = 60_000;

const idsOf = (entries: { message: { id: string } }[]) => entries.map((entry) => entry.message.id);

/** The behaviour every `Journal` must show (ports/journal.ts); run it once per implementation. */
export function journalContract(name: string, factory: StoreFactory<Journal>): void {
  describe(`Journal contract: ${name}`, () => {
    const subject = useStoreUnderTest(factory);

    describe('when nothing was appended', () => {
      it('loads an empty list', async () => {
        expect(await subject.store.load()).toEqual([]);
      });
    });

    describe('when entries are appended', () => {
      it('loads them in acceptance order, 1000 of them included', async () => {
        const entries = Array.from({ length: 1000 }, (_, index) => queuedMessageFixture(index));
        // Descending ids prove the order is the append order, not an id sort.
        entries.reverse();
        for (const entry of entries) await subject.store.append(entry);
        expect(idsOf(await subject.store.load())).toEqual(idsOf(entries));
      });

      it('returns every field as appended: elements, raw event, thread, rule', async () => {
        const entry = queuedMessageFixture(1, { attempt: 2 });
        const withoutRule = queuedMessageFixture(2, { routedByRule: false, rule: undefined });
        await subject.store.append(entry);
        await subject.store.append(withoutRule);
        expect(await subject.store.load()).toEqual([entry, withoutRule]);
      });

      it('keeps what was appended when the caller mutates its object afterwards', async () => {
        const entry = queuedMessageFixture(1);
        await subject.store.append(entry);
        entry.attempt = 9;
        entry.message.text = 'changed';
        const [loaded] = await subject.store.load();
        expect(loaded?.attempt).toBe(0);
        expect(loaded?.message.text).toBe('@switchboard hello 1');
      });

      it('replaces an entry appended again and moves it behind the later ones (a replay)', async () => {
        for (const index of [1, 2, 3]) await subject.store.append(queuedMessageFixture(index));
        await subject.store.append(queuedMessageFixture(1, { replayOf: 'audit-1' }));
        const loaded = await subject.store.load();
        expect(idsOf(loaded)).toEqual(idsOf([2, 3, 1].map((index) => queuedMessageFixture(index))));
        expect(loaded[2]?.replayOf).toBe('audit-1');
      });
    });

    describe('when appends carry a delivery key', () => {
      it('journals the first and answers duplicate to the same key within its TTL, writing nothing', async () => {
        const delivery = { key: 'telegram:tg:1', ttlMs: KEY_TTL_MS };
        expect(await subject.store.append(queuedMessageFixture(1), delivery)).toBe('appended');
        subject.advance(KEY_TTL_MS - 1);
        expect(await subject.store.append(queuedMessageFixture(2), delivery)).toBe('duplicate');
        expect(idsOf(await subject.store.load())).toEqual(idsOf([queuedMessageFixture(1)]));
      });

      it('journals exactly one of several concurrent appends with one key', async () => {
        const entries = [1, 2, 3, 4, 5].map((index) => queuedMessageFixture(index));
        const results = await Promise.all(
          entries.map((entry) => subject.store.append(entry, { key: 'slack:sl:Ev1', ttlMs: KEY_TTL_MS })),
        );
        expect(results.filter((result) => result === 'appended')).toHaveLength(1);
        expect(idsOf(await subject.store.load())).toEqual(idsOf([entries[results.indexOf('appended')]!]));
      });

      it('keeps keys apart and leaves appends without a key alone', async () => {
        expect(await subject.store.append(queuedMessageFixture(1), { key: 'a', ttlMs: KEY_TTL_MS })).toBe(
          'appended',
        );
        expect(await subject.store.append(queuedMessageFixture(2), { key: 'b', ttlMs: KEY_TTL_MS })).toBe(
          'appended',
        );
        expect(await subject.store.append(queuedMessageFixture(3))).toBe('appended');
        expect(await subject.store.load()).toHaveLength(3);
      });

      it('accepts the key again once its TTL has passed', async () => {
        await subject.store.append(queuedMessageFixture(1), { key: 'discord:dc:9', ttlMs: 1000 });
        subject.advance(1000);
        expect(
          await subject.store.append(queuedMessageFixture(2), { key: 'discord:dc:9', ttlMs: 1000 }),
        ).toBe('appended');
      });

      it('still remembers keys within their TTL after a reopen', async (context) => {
        await subject.store.append(queuedMessageFixture(1), { key: 'telegram:tg:5', ttlMs: KEY_TTL_MS });
        const reopened = await subject.reopen();
        if (reopened === null) return context.skip('not durable');
        expect(
          await reopened.append(queuedMessageFixture(2), { key: 'telegram:tg:5', ttlMs: KEY_TTL_MS }),
        ).toBe('duplicate');
        expect(idsOf(await reopened.load())).toEqual(idsOf([queuedMessageFixture(1)]));
      });
    });

    describe('when calls are made without waiting for one another', () => {
      it('applies them in call order', async () => {
        const [first, second] = [1, 2].map((index) => queuedMessageFixture(index));
        const firstId = first!.message.id;
        const secondId = second!.message.id;
        await Promise.all([
          subject.store.append(first!),
          subject.store.markStarted([firstId], 1),
          subject.store.remove([firstId]),
          subject.store.append(second!),
          subject.store.markStarted([secondId], 1),
          subject.store.markStarted([secondId], 2),
          subject.store.remove([firstId]),
        ]);
        expect((await subject.store.load()).map((entry) => [entry.message.id, entry.attempt])).toEqual([
          [secondId, 2],
        ]);
      });

      it('applies a start made after a removal and a new append of the same id', async () => {
        const entry = queuedMessageFixture(1);
        const id = entry.message.id;
        await subject.store.append(entry);
        await Promise.all([
          subject.store.markStarted([id], 1),
          subject.store.remove([id]),
          subject.store.append(entry),
          subject.store.markStarted([id], 2),
        ]);
        expect((await subject.store.load()).map((loaded) => [loaded.message.id, loaded.attempt])).toEqual([
          [id, 2],
        ]);
      });
    });

    describe('when a turn starts', () => {
      it('records the new attempt of exactly the listed messages', async () => {
        for (const index of [1, 2, 3]) await subject.store.append(queuedMessageFixture(index));
        const [first, second, third] = [1, 2, 3].map((index) => queuedMessageFixture(index).message.id);
        await subject.store.markStarted([first!, third!], 1);
        await subject.store.markStarted([third!], 2);
        const attempts = (await subject.store.load()).map((entry) => [entry.message.id, entry.attempt]);
        expect(attempts).toEqual([
          [first, 1],
          [second, 0],
          [third, 2],
        ]);
      });

      it('ignores ids it does not hold', async () => {
        await subject.store.append(queuedMessageFixture(1));
        await subject.store.markStarted(['unknown'], 3);
        expect(await subject.store.load()).toEqual([queuedMessageFixture(1)]);
      });
    });

    describe('when messages are put back to wait on backoff', () => {
      it('records the retry time of exactly the listed messages, the latest one winning', async () => {
        for (const index of [1, 2, 3]) await subject.store.append(queuedMessageFixture(index));
        const [first, second, third] = [1, 2, 3].map((index) => queuedMessageFixture(index).message.id);
        await subject.store.markRetry([first!, third!], 1_000);
        await subject.store.markRetry([third!], 2_000);
        await subject.store.markRetry(['unknown'], 3_000);
        const retries = (await subject.store.load()).map((entry) => [entry.message.id, entry.retryAtMs]);
        expect(retries).toEqual([
          [first, 1_000],
          [second, undefined],
          [third, 2_000],
        ]);
      });

      it('keeps the attempt and the retry time apart', async () => {
        const id = queuedMessageFixture(1).message.id;
        await subject.store.append(queuedMessageFixture(1));
        await Promise.all([
          subject.store.markStarted([id], 1),
          subject.store.markRetry([id], 5_000),
          subject.store.markStarted([id], 2),
        ]);
        expect(await subject.store.load()).toEqual([
          queuedMessageFixture(1, { attempt: 2, retryAtMs: 5_000 }),
        ]);
      });

      it('returns a retry time given to append', async () => {
        await subject.store.append(queuedMessageFixture(1, { attempt: 3, retryAtMs: 7_000 }));
        expect(await subject.store.load()).toEqual([
          queuedMessageFixture(1, { attempt: 3, retryAtMs: 7_000 }),
        ]);
      });
    });

    describe('when entries are removed', () => {
      it('forgets them and keeps the others in order', async () => {
        for (const index of [1, 2, 3, 4]) await subject.store.append(queuedMessageFixture(index));
        const ids = [1, 2, 3, 4].map((index) => queuedMessageFixture(index).message.id);
        await subject.store.remove([ids[1]!, ids[3]!]);
        expect(idsOf(await subject.store.load())).toEqual([ids[0], ids[2]]);
      });

      it('ignores unknown ids and an empty list', async () => {
        await subject.store.append(queuedMessageFixture(1));
        await subject.store.remove(['unknown']);
        await subject.store.remove([]);
        expect(await subject.store.load()).toHaveLength(1);
      });
    });

    describe('when the store is reopened', () => {
      it('still holds the entries, their order, their attempts and retry times', async (context) => {
        for (const index of [3, 1, 2]) await subject.store.append(queuedMessageFixture(index));
        await subject.store.markStarted([queuedMessageFixture(1).message.id], 1);
        await subject.store.markRetry([queuedMessageFixture(1).message.id], 60_000);
        await subject.store.remove([queuedMessageFixture(2).message.id]);
        const reopened = await subject.reopen();
        if (reopened === null) return context.skip('not durable');
        expect(await reopened.load()).toEqual([
          queuedMessageFixture(3),
          queuedMessageFixture(1, { attempt: 1, retryAtMs: 60_000 }),
        ]);
      });
    });
  });
}
