import type { AuditConfig } from '@switchboard/config';
import { parseInboundMessage } from '@switchboard/core';
import { describe, expect, it } from 'vitest';
import { createMessageTrail, MAX_TRAIL_TEXT_CHARS, TRAIL_REPLY_LIMITS } from '../src/message-trail.js';

const longText = 'x'.repeat(MAX_TRAIL_TEXT_CHARS + 100);
const message = parseInboundMessage({
  id: '01JTRAIL000000000000000001',
  platform: 'http',
  channel: 'api',
  chat: { type: 'person', id: 's1' },
  sender: { id: 'u1' },
  text: longText,
  platform_message_id: '1',
  received_at: 0,
});
const base = { at: 1, message, session: 'http:api:person:s1' };

function trailOf(config: Pick<AuditConfig, 'storeText' | 'recordIgnored'>) {
  return createMessageTrail(config);
}

describe('message trail', () => {
  describe('when audit.ignored is false', () => {
    it('keeps no ignored outcome', () => {
      const trail = trailOf({ storeText: 'full', recordIgnored: false });
      trail.recordOutcome({ ...base, kind: 'ignored', reason: 'not_mentioned' });
      expect(trail.get(message.id)).toBeNull();
    });
  });

  describe('when audit.ignored is true', () => {
    it('keeps the ignored outcome', () => {
      const trail = trailOf({ storeText: 'full', recordIgnored: true });
      trail.recordOutcome({ ...base, kind: 'ignored', reason: 'not_mentioned' });
      expect(trail.get(message.id)?.outcome).toMatchObject({ kind: 'ignored', reason: 'not_mentioned' });
    });
  });

  describe('when audit.store_text keeps text whole', () => {
    it('keeps the replies, and cuts the text and each reply to the trail bound', () => {
      const trail = trailOf({ storeText: 'full', recordIgnored: false });
      trail.recordOutcome({ ...base, kind: 'completed', replies: [{ text: longText }, { text: 'ok' }] });
      const entry = trail.get(message.id);
      expect(entry?.received.text).toBe(longText.slice(0, MAX_TRAIL_TEXT_CHARS));
      expect(entry?.outcome?.replies).toEqual([
        { text: longText.slice(0, MAX_TRAIL_TEXT_CHARS) },
        { text: 'ok' },
      ]);
    });
  });

  describe('when a message has more replies than the trail keeps', () => {
    it('keeps the first TRAIL_REPLY_LIMITS.maxReplies of them', () => {
      const trail = trailOf({ storeText: 'full', recordIgnored: false });
      const replies = Array.from({ length: TRAIL_REPLY_LIMITS.maxReplies + 5 }, (_, i) => ({
        text: `r${i}`,
      }));
      trail.recordOutcome({ ...base, kind: 'completed', replies });
      expect(trail.get(message.id)?.outcome?.replies).toEqual(
        replies.slice(0, TRAIL_REPLY_LIMITS.maxReplies),
      );
    });
  });

  describe('when audit.store_text cuts or keeps no text', () => {
    it.each([10, 'none'] as const)('keeps no replies under store_text %s', (storeText) => {
      const trail = trailOf({ storeText, recordIgnored: false });
      trail.recordOutcome({ ...base, kind: 'completed', replies: [{ text: 'ok' }] });
      const entry = trail.get(message.id);
      expect(entry?.received.text).toBe(storeText === 'none' ? null : 'x'.repeat(10));
      expect(entry?.outcome?.replies).toEqual([]);
    });
  });
});
