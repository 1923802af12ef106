import type { AuditConfig } from '@switchboard/config';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { type InboundMessage, type Turn, parseInboundMessage } from '@switchboard/core';
import { describe, expect, it } from 'vitest';
import {
  createMessageTrail,
  MAX_TRAIL_TEXT_CHARS,
  TRAIL_REPLY_LIMITS,
} from '../../src/admin/message-trail.js';
import { boundedText, keptReplies } from '../../src/stored-text.js';

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

function messageNumbered(n: number): InboundMessage {
  return { ...message, id: `01JTRAIL${String(n).padStart(18, '0')}`, text: 'hi' };
}

function turnOf(messages: InboundMessage[], attempt = 1, rule?: string): Turn {
  return {
    id: `turn-${messages.map(({ id }) => id).join('+')}`,
    session: base.session,
    pipeline: 'echo',
    attempt,
    messages: messages.map((queued) => ({
      message: queued,
      session: base.session,
      pipeline: 'echo',
      routedByRule: rule !== undefined,
      ...(rule === undefined ? {} : { rule }),
      attempt,
      acceptedAt: 0,
    })),
    lease: { token: 't', expiresAt: null },
  };
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

  describe('when more messages pass than it keeps', () => {
    it('forgets the oldest, one for each new one, and keeps the newest', () => {
      const trail = createMessageTrail({ storeText: 'full', recordIgnored: false, maxMessages: 3 });
      for (let n = 1; n <= 5; n++)
        trail.recordOutcome({ ...base, message: messageNumbered(n), kind: 'completed' });
      const kept = [1, 2, 3, 4, 5].map((n) => trail.get(messageNumbered(n).id) !== null);
      expect(kept).toEqual([false, false, true, true, true]);
    });

    it('keeps a forgotten message again when it comes back, as the newest', () => {
      const trail = createMessageTrail({ storeText: 'full', recordIgnored: false, maxMessages: 2 });
      const record = (n: number) =>
        trail.recordOutcome({ ...base, message: messageNumbered(n), kind: 'completed' });
      for (const n of [1, 2, 3, 1, 4]) record(n);
      expect([1, 2, 3, 4].map((n) => trail.get(messageNumbered(n).id) !== null)).toEqual([
        true,
        false,
        false,
        true,
      ]);
    });
  });

  describe('when a turn of a message routed by a rule is still running', () => {
    it('names the rule before any outcome does', () => {
      const trail = trailOf({ storeText: 'full', recordIgnored: false });
      const routed = messageNumbered(3);
      trail.observer.turnStarted(turnOf([routed], 1, 'vip'));
      expect(trail.get(routed.id)).toMatchObject({ rule: 'vip', outcome: null });
      const byDefault = messageNumbered(4);
      trail.observer.turnStarted(turnOf([byDefault]));
      expect(trail.get(byDefault.id)?.rule).toBeNull();
    });
  });

  describe('when turns run', () => {
    it('records each attempt with its result, retry wait and end, and the messages merged into it', () => {
      let clock = 1_000;
      const trail = createMessageTrail({ storeText: 'full', recordIgnored: false, now: () => clock });
      const [first, second] = [messageNumbered(1), messageNumbered(2)];
      const turn = turnOf([first, second]);
      trail.observer.turnStarted(turn);
      trail.observer.turnRetried(turn, 500);
      trail.observer.turnEnded(turn, 'retried', 40);
      clock = 2_000;
      const again = turnOf([first, second], 2);
      trail.observer.turnStarted(again);
      trail.observer.turnEnded(again, 'completed', 25);
      const common = { id: turn.id, pipeline: 'echo', messages: [first.id, second.id] };
      const turns = [
        {
          ...common,
          attempt: 1,
          started_at: 1_000,
          ended_at: 1_040,
          result: 'retried',
          duration_ms: 40,
          retry_delay_ms: 500,
        },
        {
          ...common,
          attempt: 2,
          started_at: 2_000,
          ended_at: 2_025,
          result: 'completed',
          duration_ms: 25,
          retry_delay_ms: null,
        },
      ];
      expect(trail.get(first.id)?.turns).toEqual(turns);
      expect(trail.get(second.id)?.turns).toEqual(turns);
    });

    it('keeps the first 20 attempts of a message retried more often', () => {
      const trail = trailOf({ storeText: 'full', recordIgnored: false });
      for (let attempt = 1; attempt <= 25; attempt++) {
        const turn = turnOf([message], attempt);
        trail.observer.turnStarted(turn);
        trail.observer.turnEnded(turn, 'retried', 1);
      }
      const attempts = trail.get(message.id)?.turns.map((turn) => turn.attempt);
      expect(attempts).toEqual(Array.from({ length: 20 }, (_, index) => index + 1));
    });

    it('answers a copy: changing what get returned changes nothing kept', () => {
      const trail = trailOf({ storeText: 'full', recordIgnored: false });
      trail.observer.turnStarted(turnOf([message]));
      trail.recordOutcome({ ...base, kind: 'completed', replies: [{ text: 'ok' }] });
      const read = trail.get(message.id);
      read?.turns[0]?.messages.push('other');
      read?.outcome?.replies.push({ text: 'more' });
      expect(trail.get(message.id)?.turns[0]?.messages).toEqual([message.id]);
      expect(trail.get(message.id)?.outcome?.replies).toEqual([{ text: 'ok' }]);
    });
  });

  describe('when an outcome carries an error', () => {
    it('answers it as one line, code first', () => {
      const trail = trailOf({ storeText: 'full', recordIgnored: false });
      trail.recordOutcome({
        ...base,
        kind: 'dead_lettered',
        error: { code: 'SB_PIPELINE_FAILED', message: 'upstream answered 500' },
      });
      expect(trail.get(message.id)?.outcome?.error).toBe('SB_PIPELINE_FAILED: upstream answered 500');
    });
  });
});

describe('message trail memory', () => {
  it('holds no more of a long text or reply than it keeps: 100 texts of 1 MB stay far below 100 MB', () => {
    // A full collection before each reading; V8 allows turning its gc() on at run time.
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const trail = createMessageTrail({ storeText: 'full', recordIgnored: false });
    gc();
    const before = process.memoryUsage().heapUsed;
    for (let n = 0; n < 100; n++) {
      // Each text its own string (repeat of a varying unit), as parsed bodies are.
      const text = `${n}`.padEnd(8, '-').repeat(131_072);
      const long = { ...messageNumbered(n), text };
      trail.recordOutcome({ ...base, message: long, kind: 'completed', replies: [{ text: `${text}!` }] });
    }
    gc();
    const grownMb = (process.memoryUsage().heapUsed - before) / 1e6;
    expect(trail.get(messageNumbered(99).id)?.received.text).toHaveLength(MAX_TRAIL_TEXT_CHARS);
    expect(grownMb).toBeLessThan(10);
  });
});

describe('boundedText', () => {
  it('answers a text within the bound as it is', () => {
    const text = 'short text';
    expect(boundedText(text, 500)).toBe(text);
  });

  it('cuts a longer text to the bound, lone surrogates and all', () => {
    const text = `${'a'.repeat(9)}\u{1F600}tail`;
    expect(boundedText(text, 10)).toBe(text.slice(0, 10));
    expect(boundedText('x'.repeat(600), 500)).toBe('x'.repeat(500));
  });
});

describe('keptReplies', () => {
  const limits = { maxReplies: 5, maxChars: 10 };
  const data = Buffer.alloc(300, 7).toString('base64');
  const replies = [
    { text: 'a chart for you', attachments: [{ type: 'image' as const, data, name: 'c.png' }] },
    { attachments: [{ type: 'file' as const, url: 'https://example.com/r.pdf' }] },
  ];

  describe('when audit.store_text is full', () => {
    it("cuts texts and leaves attachments' data out, saying how many bytes it held", () => {
      expect(keptReplies(replies, 'full', limits)).toEqual([
        { text: 'a chart fo', attachments: [{ type: 'image', data: '', data_bytes: 300, name: 'c.png' }] },
        { attachments: [{ type: 'file', url: 'https://example.com/r.pdf' }] },
      ]);
    });
  });

  describe('when it keeps less', () => {
    it('keeps no reply, so neither urls nor data', () => {
      expect(keptReplies(replies, 'none', limits)).toEqual([]);
      expect(keptReplies(replies, 100, limits)).toEqual([]);
    });
  });
});
