import type { AuditConfig } from '@switchboard/config';
import {
  type AuditLog,
  type Outcome,
  createMemoryAuditLog,
  createOutcomeBus,
  parseInboundMessage,
  silentLogger,
} from '@switchboard/core';
import { describe, expect, it } from 'vitest';
import { createAuditRecorder } from '../src/audit-recorder.js';

const message = parseInboundMessage({
  id: '01JAUDIT000000000000000001',
  platform: 'telegram',
  channel: 'tg',
  chat: { type: 'group', id: '-100123' },
  sender: { id: '42', name: 'Ada' },
  text: 'buy now, limited offer',
  platform_message_id: '-100123:7',
  received_at: 0,
});
const base = { at: 1, message, session: 'telegram:tg:group:-100123' };

async function recorded(
  config: Partial<Pick<AuditConfig, 'storeText' | 'recordIgnored'>>,
  outcomes: Outcome[],
) {
  const auditLog = createMemoryAuditLog();
  const recorder = createAuditRecorder({
    auditLog,
    config: { kind: 'sqlite', retentionDays: 30, storeText: 'full', recordIgnored: false, ...config },
    logger: silentLogger,
  });
  for (const outcome of outcomes) recorder.record(outcome);
  await new Promise((resolve) => setImmediate(resolve));
  return (await auditLog.query({ limit: 10 })).items;
}

describe('audit recorder', () => {
  describe('when outcomes of every kind arrive', () => {
    it('audits all but completed, duplicate and (by default) ignored', async () => {
      const items = await recorded({}, [
        { ...base, kind: 'completed' },
        { ...base, kind: 'duplicate', reason: 'redelivery' },
        { ...base, kind: 'ignored', reason: 'not_mentioned' },
        { ...base, kind: 'discarded', reason: 'rule', rule: 'drop-ads' },
      ]);
      expect(items).toMatchObject([
        {
          outcome: 'discarded',
          rule: 'drop-ads',
          channel: 'tg',
          platform: 'telegram',
          chat_type: 'group',
          chat_id: '-100123',
          sender_id: '42',
          sender_name: 'Ada',
          platform_message_id: '-100123:7',
          text: 'buy now, limited offer',
          payload: null,
        },
      ]);
    });

    it('also audits ignored outcomes with audit.ignored', async () => {
      const items = await recorded({ recordIgnored: true }, [
        { ...base, kind: 'ignored', reason: 'not_mentioned' },
      ]);
      expect(items.map((item) => item.reason)).toEqual(['not_mentioned']);
    });
  });

  describe('when audit.store_text limits the text', () => {
    it('keeps no text with none and the first n characters with a number', async () => {
      const discarded: Outcome = { ...base, kind: 'discarded', reason: 'rule', rule: 'r' };
      expect((await recorded({ storeText: 'none' }, [discarded]))[0]?.text).toBeNull();
      expect((await recorded({ storeText: 7 }, [discarded]))[0]?.text).toBe('buy now');
    });
  });

  describe('when a turn is dead-lettered', () => {
    it('keeps the message as a replayable payload with the error', async () => {
      const [item] = await recorded({}, [
        {
          ...base,
          kind: 'dead_lettered',
          reason: 'max_attempts',
          pipeline: 'bot',
          error: { code: 'SB_PIPELINE_FAILED', message: 'HTTP 503' },
        },
      ]);
      expect(item).toMatchObject({ error: 'SB_PIPELINE_FAILED: HTTP 503', pipeline: 'bot' });
      expect(item?.payload).toMatchObject({
        message: { id: message.id, text: message.text, elements: message.elements },
        pipeline: 'bot',
        attempt: 0,
        replayable: true,
      });
    });
  });

  describe('when audit.store_text limits what a dead letter keeps', () => {
    const withEverything = parseInboundMessage({
      ...message,
      elements: [
        { type: 'text', text: 'buy now, limited offer' },
        { type: 'quote', message_id: '6', text: 'what is on offer today?' },
        { type: 'command', name: 'ask', args: 'about the offer' },
        { type: 'image', file_id: 'AgAD' },
      ],
      raw: { update_id: 7, message: { text: 'buy now, limited offer' } },
    });
    const deadLettered = (kept: typeof message): Outcome => ({
      ...base,
      message: kept,
      kind: 'dead_lettered',
      reason: 'fatal_error',
      pipeline: 'bot',
    });

    it('keeps no text, no elements and no raw event with none, and marks it not replayable', async () => {
      const [item] = await recorded({ storeText: 'none' }, [deadLettered(withEverything)]);
      expect(item?.payload?.message).toMatchObject({ id: message.id, text: '', elements: [] });
      expect(item?.payload?.message).not.toHaveProperty('raw');
      expect(item?.payload?.replayable).toBe(false);
      expect(JSON.stringify(item?.payload)).not.toMatch(/offer/);
    });

    it('cuts the text and every element text to n characters, drops the raw event, and marks a cut one not replayable', async () => {
      const [item] = await recorded({ storeText: 7 }, [deadLettered(withEverything)]);
      expect(item?.payload?.message).toMatchObject({
        text: 'buy now',
        elements: [
          { type: 'text', text: 'buy now' },
          { type: 'quote', message_id: '6', text: 'what is' },
          { type: 'command', name: 'ask', args: 'about t' },
          { type: 'image', file_id: 'AgAD' },
        ],
      });
      expect(item?.payload?.message).not.toHaveProperty('raw');
      expect(item?.payload?.replayable).toBe(false);
    });

    it('keeps the undelivered replies of a delivery_failed dead letter only under full', async () => {
      const short = parseInboundMessage({ ...message, text: 'hi', elements: [{ type: 'text', text: 'hi' }] });
      const failedDelivery: Outcome = {
        ...deadLettered(short),
        reason: 'delivery_failed',
        undelivered: { origin: short, replies: [{ text: 'a long and private answer' }] },
      };
      const [full] = await recorded({ storeText: 'full' }, [failedDelivery]);
      expect(full?.payload?.undelivered?.replies).toEqual([{ text: 'a long and private answer' }]);
      // The text fits the length and is kept whole; the answer is not kept at all.
      const [cut] = await recorded({ storeText: 7 }, [failedDelivery]);
      expect(cut?.payload?.replayable).toBe(true);
      expect(cut?.payload).not.toHaveProperty('undelivered');
      expect(JSON.stringify(cut?.payload)).not.toMatch(/private answer/);
    });

    it('keeps a message that fits within n whole and replayable', async () => {
      const short = parseInboundMessage({ ...message, text: 'hi', elements: [{ type: 'text', text: 'hi' }] });
      const [item] = await recorded({ storeText: 7 }, [deadLettered(short)]);
      expect(item?.payload?.message).toMatchObject({ text: 'hi', elements: [{ type: 'text', text: 'hi' }] });
      expect(item?.payload?.replayable).toBe(true);
    });
  });

  describe('when the commit that ends a dead-lettered delivery fails and its outcome is recorded again', () => {
    const failedDelivery: Outcome = {
      ...base,
      kind: 'dead_lettered',
      reason: 'delivery_failed',
      pipeline: 'bot',
      error: { code: 'SB_DELIVERY_FAILED', message: 'HTTP 400' },
      deliveryId: 't-01JAUDIT000000000000000001',
    };

    /** The recorder on a real bus, as the gateway subscribes it: a listener that stores outcomes. */
    function onBus(auditLog: AuditLog) {
      const bus = createOutcomeBus();
      const recorder = createAuditRecorder({
        auditLog,
        config: { kind: 'sqlite', retentionDays: 30, storeText: 'full', recordIgnored: false },
        logger: silentLogger,
      });
      bus.subscribe(recorder.record, { stores: true });
      return bus;
    }

    it('writes one record when the first one landed on its own', async () => {
      const auditLog = createMemoryAuditLog();
      const bus = onBus(auditLog);
      const failed = Promise.resolve(false);
      bus.record(failedDelivery, failed);
      await failed;
      // The reply sender writes the settlement again and records the outcome with that commit.
      bus.record(failedDelivery, Promise.resolve(true));
      await new Promise((resolve) => setImmediate(resolve));
      const { items } = await auditLog.query({ limit: 10 });
      expect(items.map((item) => [item.message_id, item.outcome])).toEqual([[message.id, 'dead_lettered']]);
    });

    it('writes the record again when the first write failed with that commit', async () => {
      const memory = createMemoryAuditLog();
      let failures = 1;
      const auditLog: AuditLog = {
        ...memory,
        append: (record) =>
          failures-- > 0 ? Promise.reject(new Error('disk I/O error')) : memory.append(record),
      };
      const bus = onBus(auditLog);
      bus.record(failedDelivery, Promise.resolve(false));
      await new Promise((resolve) => setImmediate(resolve));
      bus.record(failedDelivery, Promise.resolve(true));
      await new Promise((resolve) => setImmediate(resolve));
      expect((await memory.query({ limit: 10 })).items).toHaveLength(1);
    });

    it('writes one record when it is recorded again while the first write is still under way', async () => {
      const memory = createMemoryAuditLog();
      let land: () => void = () => {};
      const held = new Promise<void>((resolve) => {
        land = resolve;
      });
      const auditLog: AuditLog = { ...memory, append: (record) => held.then(() => memory.append(record)) };
      const bus = onBus(auditLog);
      const failed = Promise.resolve(false);
      bus.record(failedDelivery, failed);
      await failed;
      bus.record(failedDelivery, Promise.resolve(true));
      land();
      await held;
      await new Promise((resolve) => setImmediate(resolve));
      expect((await memory.query({ limit: 10 })).items).toHaveLength(1);
    });

    it('records the same message again for another end of it (its replay, which failed again)', async () => {
      const auditLog = createMemoryAuditLog();
      const bus = onBus(auditLog);
      const committed = Promise.resolve(true);
      bus.record(failedDelivery, committed);
      await committed;
      await new Promise((resolve) => setImmediate(resolve));
      const [first] = (await auditLog.query({ limit: 10 })).items;
      bus.record({ ...failedDelivery, at: 2, deliveryId: `replay:${first?.id}` }, Promise.resolve(true));
      await new Promise((resolve) => setImmediate(resolve));
      expect((await auditLog.query({ limit: 10 })).items).toHaveLength(2);
    });
  });
});
