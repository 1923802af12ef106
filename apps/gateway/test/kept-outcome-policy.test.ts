import { type Config, ConfigSchema } from '@switchboard/config';
import {
  type Outcome,
  createMemoryAuditLog,
  createOutcomeBus,
  parseInboundMessage,
  silentLogger,
} from '@switchboard/core';
import { describe, expect, it } from 'vitest';
import { createAuditRecorder } from '../src/audit-recorder.js';
import { keptOutcomePolicy, recoverKeptOutcome } from '../src/kept-outcomes.js';

const PRIVATE_TEXT = 'my private question about the offer';

const message = parseInboundMessage({
  id: '01JKEPTPOLICY0000000000001',
  platform: 'openapi',
  channel: 'api',
  chat: { type: 'person', id: 's1' },
  sender: { id: 'u1' },
  text: PRIVATE_TEXT,
  platform_message_id: 'p1',
  received_at: 0,
  raw: { text: PRIVATE_TEXT },
});

function configWith(storeText: 'full' | 'none' | number): Config {
  return ConfigSchema.parse({
    audit: { store_text: storeText },
    channels: [{ id: 'api', type: 'openapi' }],
    pipelines: [{ id: 'bot', type: 'echo' }],
    routing: { default: 'bot' },
  });
}

const deadLetter: Outcome = {
  kind: 'dead_lettered',
  reason: 'fatal_error',
  at: 1,
  message,
  session: 'openapi:api:person:s1',
  pipeline: 'bot',
  turnId: 't1',
  replies: [{ text: 'Sorry.' }],
};

const givenUp: Outcome = {
  ...deadLetter,
  reason: 'delivery_failed',
  deliveryId: 't1',
  replies: [{ text: 'a long private answer' }],
  undelivered: { origin: message, replies: [{ text: 'a long private answer' }] },
};

/** The outcome a replica recovers from what `config`'s policy kept of `outcome`. */
function recoveredOf(config: Config, outcome: Outcome): Outcome {
  const kept = keptOutcomePolicy(config).keep(outcome);
  if (kept === null) throw new Error('not kept');
  return JSON.parse(kept) as Outcome;
}

describe('keptOutcomePolicy', () => {
  describe('when audit.store_text cuts the text', () => {
    it('keeps the text as the audit does, no raw event, and the recovered dead letter is not replayable', async () => {
      const config = configWith(10);
      const recovered = recoveredOf(config, deadLetter);
      expect(recovered.message.text).toBe(PRIVATE_TEXT.slice(0, 10));
      expect(recovered.message).not.toHaveProperty('raw');
      expect(recovered.replies).toEqual([{ text: 'Sorry.' }]);
      const auditLog = createMemoryAuditLog();
      const audit = createAuditRecorder({ auditLog, config: config.audit, logger: silentLogger });
      expect(await audit.record(recovered)).toBe(true);
      const [record] = (await auditLog.query({ limit: 10 })).items;
      expect(record?.payload?.replayable).toBe(false);
    });

    it('keeps no text at all under none', () => {
      const kept = keptOutcomePolicy(configWith('none')).keep(deadLetter);
      expect(kept).not.toContain('private');
    });
  });

  describe('when a delivery was given up', () => {
    it('keeps its replies once, and only under full, as the audit does', () => {
      const full = recoveredOf(configWith('full'), givenUp);
      expect(full.replies).toBeUndefined();
      expect(full.undelivered?.replies).toEqual([{ text: 'a long private answer' }]);
      expect(
        keptOutcomePolicy(configWith('full')).keep(givenUp)?.split('a long private answer'),
      ).toHaveLength(2);
      const cut = keptOutcomePolicy(configWith(10)).keep(givenUp);
      expect(cut).not.toContain('a long private answer');
    });
  });

  describe('when nothing is cut (store_text full)', () => {
    it('keeps the text whole: the recovered dead letter is replayable', async () => {
      const config = configWith('full');
      const recovered = recoveredOf(config, deadLetter);
      expect(recovered.message.text).toBe(PRIVATE_TEXT);
      const auditLog = createMemoryAuditLog();
      const audit = createAuditRecorder({ auditLog, config: config.audit, logger: silentLogger });
      await audit.record(recovered);
      const [record] = (await auditLog.query({ limit: 10 })).items;
      expect(record?.payload?.replayable).toBe(true);
    });
  });
});

describe('recoverKeptOutcome', () => {
  describe("when a kept outcome is of a channel this replica's config lacks", () => {
    it('records nothing and leaves it to a replica that runs the channel', () => {
      const bus = createOutcomeBus();
      const heard: Outcome[] = [];
      bus.subscribe((outcome) => heard.push(outcome), { records: true });
      const recover = recoverKeptOutcome(configWith('full'), bus);
      expect(recover({ ...deadLetter, message: { ...message, channel: 'elsewhere' } })).toBe(false);
      expect(heard).toEqual([]);
      expect(recover(deadLetter)).toBe(true);
      expect(heard).toHaveLength(1);
    });
  });

  describe('when it recovers an outcome', () => {
    it('tells only the listeners that write its records, not those that count', () => {
      const bus = createOutcomeBus();
      const counted: Outcome[] = [];
      const audited: Outcome[] = [];
      bus.subscribe((outcome) => counted.push(outcome));
      bus.subscribe((outcome) => audited.push(outcome), { stores: true });
      recoverKeptOutcome(configWith('full'), bus)(deadLetter);
      expect(audited).toHaveLength(1);
      expect(counted).toEqual([]);
    });
  });
});
