import type { AuditConfig } from '@switchboard/config';
import {
  type AuditRecord,
  createMemoryAuditLog,
  createMemoryMessageStatusStore,
  parseInboundMessage,
} from '@switchboard/core';
import { describe, expect, it } from 'vitest';
import { messagePath } from '../../src/admin/message-path.js';
import { createMessageTrail } from '../../src/admin/message-trail.js';

const message = parseInboundMessage({
  id: '01JPATH0000000000000000001',
  platform: 'http',
  channel: 'api',
  chat: { type: 'person', id: 's1' },
  sender: { id: 'u1' },
  text: 'what is my balance?',
  platform_message_id: '1',
  received_at: 0,
});
const session = 'http:api:person:s1';

function sourcesOf(storeText: AuditConfig['storeText']) {
  return {
    auditLog: createMemoryAuditLog(),
    statuses: createMemoryMessageStatusStore(),
    trail: createMessageTrail({ storeText, recordIgnored: false }),
    storeText,
  };
}

const status = (fields: { status: 'completed' | 'queued'; updated_at: number }) => ({
  id: message.id,
  channel: message.channel,
  tenant: 'default',
  generation: 0,
  pipeline: 'bot',
  rule: null,
  turn: 't1',
  replies: [{ text: 'your balance is 1 234 EUR' }],
  delivery: 'delivered' as const,
  error: null,
  trace_id: null,
  ...fields,
});

const deadLetter = (at: number): AuditRecord => ({
  id: '01JPATHAUDIT00000000000001',
  at,
  outcome: 'dead_lettered',
  reason: 'fatal_error',
  rule: null,
  channel: 'api',
  platform: 'http',
  session,
  chat_type: 'person',
  chat_id: 's1',
  sender_id: 'u1',
  sender_name: null,
  pipeline: 'bot',
  message_id: message.id,
  platform_message_id: '1',
  text: message.text,
  error: 'SB_PIPELINE_FAILED: boom',
  payload: null,
  replayed_at: null,
  tenant: 'default',
});

describe('message path', () => {
  describe('when only the status store knows the replies', () => {
    it('shows them under audit.store_text full', async () => {
      const sources = sourcesOf('full');
      await sources.statuses.put(status({ status: 'completed', updated_at: 5 }));
      expect((await messagePath(message.id, sources)).replies).toEqual([
        { text: 'your balance is 1 234 EUR' },
      ]);
    });

    it.each([10, 'none'] as const)('shows none under audit.store_text %s', async (storeText) => {
      const sources = sourcesOf(storeText);
      await sources.statuses.put(status({ status: 'completed', updated_at: 5 }));
      const path = await messagePath(message.id, sources);
      expect(path.outcome?.status).toBe('completed');
      expect(path.replies).toEqual([]);
    });
  });

  describe('when its turn is still running', () => {
    it('names the rule that routed it, not the default', async () => {
      const sources = sourcesOf('full');
      sources.trail.observer.turnStarted({
        id: 't1',
        session,
        pipeline: 'bot',
        attempt: 1,
        messages: [
          { message, session, pipeline: 'bot', routedByRule: true, rule: 'vip', attempt: 1, acceptedAt: 0 },
        ],
        lease: { token: 'x', expiresAt: null },
      });
      const path = await messagePath(message.id, sources);
      expect(path.outcome).toBeNull();
      expect(path.routed).toEqual({ rule: 'vip', by_default: false, pipeline: 'bot' });
    });
  });

  describe('when the sources disagree on the outcome', () => {
    it('reports the newest: a replay completed after the dead letter this replica recorded', async () => {
      const sources = sourcesOf('full');
      sources.trail.recordOutcome({ at: 10, message, session, kind: 'dead_lettered', reason: 'fatal_error' });
      await sources.auditLog.append(deadLetter(10));
      await sources.statuses.put(status({ status: 'completed', updated_at: 20 }));
      expect((await messagePath(message.id, sources)).outcome).toMatchObject({ status: 'completed', at: 20 });
    });

    it('keeps the reason the audit log names when the status tells the same end later', async () => {
      const sources = sourcesOf('full');
      await sources.auditLog.append(deadLetter(10));
      await sources.statuses.put({
        ...status({ status: 'completed', updated_at: 12 }),
        status: 'dead_lettered',
      });
      expect((await messagePath(message.id, sources)).outcome).toMatchObject({
        status: 'dead_lettered',
        reason: 'fatal_error',
        at: 10,
      });
    });

    it('keeps the dead letter when the status is older', async () => {
      const sources = sourcesOf('full');
      await sources.auditLog.append(deadLetter(30));
      await sources.statuses.put(status({ status: 'queued', updated_at: 20 }));
      expect((await messagePath(message.id, sources)).outcome).toMatchObject({
        status: 'dead_lettered',
        reason: 'fatal_error',
        at: 30,
      });
    });
  });

  describe('when its sources name different tenants', () => {
    const tenantOfChannel = (channel: string) => (channel === 'api' ? 'bravo' : 'default');

    it('names the tenant they agree on', async () => {
      const sources = { ...sourcesOf('full'), tenantOfChannel };
      await sources.auditLog.append({ ...deadLetter(10), tenant: 'bravo' });
      await sources.statuses.put(status({ status: 'completed', updated_at: 20 }));
      expect((await messagePath(message.id, sources)).tenant).toBe('bravo');
    });

    it('names none when a record of another tenant carries its id (an operator reply given it)', async () => {
      const sources = { ...sourcesOf('full'), tenantOfChannel };
      await sources.auditLog.append({ ...deadLetter(10), tenant: 'bravo' });
      await sources.auditLog.append({
        ...deadLetter(30),
        id: '01JPATHAUDIT00000000000002',
        outcome: 'handed_off',
        reason: 'operator_reply',
        tenant: 'acme',
      });
      expect((await messagePath(message.id, sources)).tenant).toBeNull();
    });
  });
});
