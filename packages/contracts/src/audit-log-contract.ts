import { describe, expect, it } from 'vitest';
import type { AuditLog, AuditQuery, AuditRecord } from '@switchboard/core';
import {
  auditRecordFixture,
  queuedMessageFixture,
  type StoreFactory,
  useStoreUnderTest,
} from './store-harness.js';

/** Eight records that differ in every filtered column; appended out of order. */
function filterDataset(): AuditRecord[] {
  const s1 = 'telegram:tg:group:1';
  const s2 = 'slack:sl:group:C2';
  return [
    auditRecordFixture(1, {
      outcome: 'discarded',
      reason: 'rule',
      rule: 'drop-ads',
      channel: 'tg',
      session: s1,
    }),
    auditRecordFixture(2, {
      outcome: 'ignored',
      reason: 'not_mentioned',
      rule: null,
      channel: 'sl',
      session: s2,
    }),
    auditRecordFixture(3, {
      outcome: 'dropped',
      reason: 'queue_overflow',
      rule: null,
      channel: 'tg',
      session: s1,
    }),
    auditRecordFixture(4, {
      outcome: 'dead_lettered',
      reason: 'max_attempts',
      rule: null,
      channel: 'tg',
      session: 'telegram:tg:person:3',
      pipeline: 'assistant',
      error: 'SB_PIPELINE_FAILED: upstream answered 503',
      payload: { ...queuedMessageFixture(4), replayable: true },
    }),
    auditRecordFixture(5, { outcome: 'discarded', reason: 'rule', rule: 'spam', channel: 'sl', session: s2 }),
    auditRecordFixture(6, {
      outcome: 'dropped',
      reason: 'shutdown',
      rule: null,
      channel: 'dc',
      tenant: 'acme',
      session: 'd:4',
      text: '100% Off',
    }),
    auditRecordFixture(7, {
      outcome: 'dropped',
      reason: 'queue_overflow',
      rule: null,
      channel: 'sl',
      session: s2,
      sender_id: 'u7',
    }),
    auditRecordFixture(8, {
      outcome: 'discarded',
      reason: 'rule',
      rule: 'drop-ads',
      channel: 'tg',
      session: s1,
    }),
  ];
}

/** `at` of fixture `index` (fixtures are one second apart). */
const atOf = (index: number) => auditRecordFixture(index).at;
const idOf = (index: number) => auditRecordFixture(index).id;

/** The behaviour every `AuditLog` must show (ports/audit-log.ts); run it once per implementation. */
export function auditLogContract(name: string, factory: StoreFactory<AuditLog>): void {
  describe(`AuditLog contract: ${name}`, () => {
    const subject = useStoreUnderTest(factory);

    async function appendAll(records: AuditRecord[]): Promise<void> {
      for (const record of records) await subject.store.append(record);
    }

    /** Follows `nextCursor` to the end; returns each page's ids. */
    async function pages(query: AuditQuery): Promise<string[][]> {
      const result: string[][] = [];
      let cursor: string | undefined;
      do {
        const page = await subject.store.query({ ...query, cursor });
        result.push(page.items.map((item) => item.id));
        cursor = page.nextCursor ?? undefined;
      } while (cursor !== undefined && result.length < 100);
      return result;
    }

    describe('when records are appended', () => {
      it('returns every field as appended, payload included', async () => {
        const records = filterDataset();
        await appendAll(records);
        const { items } = await subject.store.query({ limit: 100 });
        expect(items).toEqual([...records].reverse());
      });

      it('returns them newest first whatever the append order, ties broken by id', async () => {
        const records = filterDataset();
        const shuffled = [3, 0, 7, 1, 5, 2, 6, 4].map((index) => records[index]!);
        await appendAll(shuffled);
        const tie = auditRecordFixture(9, { at: atOf(8) });
        await subject.store.append(tie);
        const { items, nextCursor } = await subject.store.query({ limit: 100 });
        expect(items.map((item) => item.id)).toEqual([9, 8, 7, 6, 5, 4, 3, 2, 1].map(idOf));
        expect(nextCursor).toBeNull();
      });

      it('keeps one record, the first, when the same id is recorded twice', async () => {
        const deadLetter = auditRecordFixture(1, {
          outcome: 'dead_lettered',
          reason: 'fatal_error',
          payload: { ...queuedMessageFixture(1), replayable: true },
        });
        await subject.store.append(deadLetter);
        await subject.store.markReplayed(deadLetter.id, subject.now());
        await subject.store.append({ ...deadLetter, text: 'a second write' });
        const { items } = await subject.store.query({ limit: 100 });
        expect(items).toEqual([{ ...deadLetter, replayed_at: subject.now() }]);
      });
    });

    describe('when the query has filters', () => {
      const cases: [string, Partial<AuditQuery>, number[]][] = [
        ['outcome', { outcome: 'dropped' }, [7, 6, 3]],
        ['reason', { reason: 'queue_overflow' }, [7, 3]],
        ['rule', { rule: 'drop-ads' }, [8, 1]],
        ['channel', { channel: 'sl' }, [7, 5, 2]],
        ['tenant', { tenant: 'acme' }, [6]],
        ['tenant and outcome', { tenant: 'default', outcome: 'dropped' }, [7, 3]],
        ['session', { session: 'telegram:tg:group:1' }, [8, 3, 1]],
        ['since (inclusive)', { since: atOf(5) }, [8, 7, 6, 5]],
        ['until (exclusive)', { until: atOf(3) }, [2, 1]],
        ['since and until', { since: atOf(3), until: atOf(6) }, [5, 4, 3]],
        ['outcome and channel', { outcome: 'dropped', channel: 'sl' }, [7]],
        ['channel within a time window', { channel: 'tg', since: atOf(2), until: atOf(7) }, [4, 3]],
        [
          'outcome, rule, session and since',
          { outcome: 'discarded', rule: 'drop-ads', session: 'telegram:tg:group:1', since: atOf(2) },
          [8],
        ],
        ['sender', { sender: 'u7' }, [7]],
        ['message id', { message: auditRecordFixture(5).message_id }, [5]],
        ['text, ignoring case', { text: 'BUY NOW 1' }, [1]],
        ['text with LIKE wildcards taken literally', { text: '%' }, [6]],
        ['text and channel', { text: 'buy now', channel: 'sl' }, [7, 5, 2]],
        ['filters nothing matches', { outcome: 'ignored', channel: 'tg' }, []],
      ];

      it.each(cases)('returns only the records matching %s, newest first', async (_, filters, expected) => {
        await appendAll(filterDataset());
        const page = await subject.store.query({ limit: 100, ...filters });
        expect(page.items.map((item) => item.id)).toEqual(expected.map(idOf));
        expect(page.nextCursor).toBeNull();
      });
    });

    describe('when results span several pages', () => {
      // Three records share each `at`, so page boundaries fall between equal timestamps.
      const tiedRecords = (count: number) =>
        Array.from({ length: count }, (_, index) =>
          auditRecordFixture(index + 1, { at: atOf(Math.floor(index / 3)) }),
        );

      it('returns at most `limit` items per page and every record exactly once', async () => {
        const records = tiedRecords(25);
        await appendAll(records);
        const result = await pages({ limit: 7 });
        expect(result.map((page) => page.length)).toEqual([7, 7, 7, 4]);
        expect(result.flat()).toEqual(records.map((record) => record.id).reverse());
      });

      it('ends without a cursor when the last page is exactly full', async () => {
        await appendAll(tiedRecords(14));
        expect((await pages({ limit: 7 })).map((page) => page.length)).toEqual([7, 7]);
      });

      it('applies the filters on every page', async () => {
        const records = Array.from({ length: 12 }, (_, index) =>
          auditRecordFixture(index + 1, { channel: index % 2 === 0 ? 'tg' : 'sl' }),
        );
        await appendAll(records);
        const expected = [11, 9, 7, 5, 3, 1].map(idOf);
        expect(await pages({ limit: 4, channel: 'tg' })).toEqual([expected.slice(0, 4), expected.slice(4)]);
      });

      it('continues where the previous page ended when newer records arrive in between', async () => {
        await appendAll(Array.from({ length: 10 }, (_, index) => auditRecordFixture(index + 1)));
        const first = await subject.store.query({ limit: 4 });
        await appendAll([11, 12, 13].map((index) => auditRecordFixture(index)));
        const second = await subject.store.query({ limit: 4, cursor: first.nextCursor! });
        const third = await subject.store.query({ limit: 4, cursor: second.nextCursor! });
        expect(first.items.map((item) => item.id)).toEqual([10, 9, 8, 7].map(idOf));
        expect(second.items.map((item) => item.id)).toEqual([6, 5, 4, 3].map(idOf));
        expect(third.items.map((item) => item.id)).toEqual([2, 1].map(idOf));
        expect(third.nextCursor).toBeNull();
      });

      it('rejects a cursor it did not issue with SB_HTTP_BAD_REQUEST', async () => {
        await expect(subject.store.query({ limit: 10, cursor: 'not-a-cursor' })).rejects.toMatchObject({
          code: 'SB_HTTP_BAD_REQUEST',
        });
      });
    });

    describe('when dead letters are recorded', () => {
      const deadLetter = (index: number, replayable = true) =>
        auditRecordFixture(index, {
          outcome: 'dead_lettered',
          reason: 'fatal_error',
          pipeline: 'assistant',
          error: 'SB_PIPELINE_FAILED: 400',
          payload: { ...queuedMessageFixture(index, { attempt: 3 }), replayable },
        });

      it('lists the unreplayed ones newest first, up to the limit', async () => {
        await appendAll([deadLetter(1), deadLetter(2), auditRecordFixture(3), deadLetter(4)]);
        expect((await subject.store.deadLetters(10)).map((item) => item.id)).toEqual([4, 2, 1].map(idOf));
        expect((await subject.store.deadLetters(2)).map((item) => item.id)).toEqual([4, 2].map(idOf));
      });

      it("lists one tenant's only when asked for a tenant", async () => {
        await appendAll([deadLetter(1), { ...deadLetter(2), tenant: 'acme' }, deadLetter(3)]);
        expect((await subject.store.deadLetters(10, 'acme')).map((item) => item.id)).toEqual([idOf(2)]);
        expect((await subject.store.deadLetters(10, 'default')).map((item) => item.id)).toEqual(
          [3, 1].map(idOf),
        );
        expect(await subject.store.deadLetters(10, 'bravo')).toEqual([]);
      });

      it('finds one by id with its payload, and answers null for other ids', async () => {
        await appendAll([deadLetter(1), auditRecordFixture(2)]);
        expect(await subject.store.getDeadLetter(idOf(1))).toEqual(deadLetter(1));
        expect(await subject.store.getDeadLetter(idOf(2))).toBeNull();
        expect(await subject.store.getDeadLetter('unknown')).toBeNull();
      });

      it('keeps whether a payload is replayable', async () => {
        await appendAll([deadLetter(1, false), deadLetter(2)]);
        expect((await subject.store.getDeadLetter(idOf(1)))?.payload?.replayable).toBe(false);
        expect((await subject.store.deadLetters(10)).map((item) => item.payload?.replayable)).toEqual([
          true,
          false,
        ]);
      });

      it('marks one replayed once: true the first time, false afterwards', async () => {
        await appendAll([deadLetter(1), deadLetter(2), auditRecordFixture(3)]);
        const replayedAt = subject.now();
        expect(await subject.store.markReplayed(idOf(1), replayedAt)).toBe(true);
        expect(await subject.store.markReplayed(idOf(1), replayedAt + 1)).toBe(false);
        expect(await subject.store.markReplayed(idOf(3), replayedAt)).toBe(false);
        expect(await subject.store.markReplayed('unknown', replayedAt)).toBe(false);
        expect((await subject.store.getDeadLetter(idOf(1)))?.replayed_at).toBe(replayedAt);
        expect((await subject.store.deadLetters(10)).map((item) => item.id)).toEqual([idOf(2)]);
      });

      it('deletes one by id: true once, false for a second time, another outcome or an unknown id', async () => {
        await appendAll([deadLetter(1), deadLetter(2), auditRecordFixture(3)]);
        expect(await subject.store.deleteDeadLetter(idOf(1))).toBe(true);
        expect(await subject.store.deleteDeadLetter(idOf(1))).toBe(false);
        expect(await subject.store.deleteDeadLetter(idOf(3))).toBe(false);
        expect(await subject.store.deleteDeadLetter('unknown')).toBe(false);
        expect(await subject.store.getDeadLetter(idOf(1))).toBeNull();
        expect(await subject.store.markReplayed(idOf(1), subject.now())).toBe(false);
        const { items } = await subject.store.query({ limit: 10 });
        expect(items.map((item) => item.id)).toEqual([3, 2].map(idOf));
      });

      it('deletes a replayed one too', async () => {
        await appendAll([deadLetter(1)]);
        await subject.store.markReplayed(idOf(1), subject.now());
        expect(await subject.store.deleteDeadLetter(idOf(1))).toBe(true);
        expect((await subject.store.query({ limit: 10 })).items).toEqual([]);
      });
    });

    describe('when old records are pruned', () => {
      it('deletes records before the cutoff, keeps the rest and returns how many it deleted', async () => {
        await appendAll([1, 2, 3, 4, 5].map((index) => auditRecordFixture(index)));
        expect(await subject.store.prune(atOf(3))).toBe(2);
        expect(await subject.store.prune(atOf(3))).toBe(0);
        const { items } = await subject.store.query({ limit: 10 });
        expect(items.map((item) => item.id)).toEqual([5, 4, 3].map(idOf));
      });
    });

    describe('when the store is reopened', () => {
      it('still holds the records and their replay marks', async (context) => {
        const records = filterDataset();
        await appendAll(records);
        await subject.store.markReplayed(idOf(4), subject.now());
        const reopened = await subject.reopen();
        if (reopened === null) return context.skip('not durable');
        const { items } = await reopened.query({ limit: 100 });
        expect(items).toEqual(
          [...records]
            .reverse()
            .map((record) => (record.id === idOf(4) ? { ...record, replayed_at: subject.now() } : record)),
        );
      });
    });
  });
}
