import { newMessageId } from '@switchboard/core';
import { type FakeLine, startFakeLine } from '@switchboard/testkit/line';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { normalizeLineEvent } from '../../src/inbound/normalize.js';
import { createLineSender } from '../../src/outbound/send.js';

const USER = `U${'01'.repeat(16)}`;
const MAX_AGE_MS = 60_000;

let fake: FakeLine;
beforeEach(async () => {
  fake = await startFakeLine();
});
afterEach(async () => {
  await fake.close();
});

/** A sender on the fake whose clock the test moves. */
function senderAt(clock: { ms: number }) {
  return createLineSender(
    {
      channelId: 'ln',
      apiUrl: fake.url,
      channelAccessToken: fake.channelAccessToken,
      timeoutMs: 5_000,
    },
    { maxAgeMs: MAX_AGE_MS, now: () => clock.ms },
  );
}

/** A message event of the fake, with the message the channel makes of it. */
function received(text: string) {
  const event = fake.textEvent({ text });
  const message = normalizeLineEvent(event, {
    channelId: 'ln',
    messageId: newMessageId(),
    receivedAt: event.timestamp,
    maxMediaBytes: 25_000_000,
  });
  if (message === null) throw new Error('not a message');
  return { event, message };
}

describe('createLineSender', () => {
  describe('when a send that replied is tried again near the end of max_age', () => {
    it('still skips the reply that went through: every text arrives once', async () => {
      const { event, message } = received('hi');
      const clock = { ms: event.timestamp };
      const sender = senderAt(clock);
      sender.remember(message.id, event.replyToken, event.timestamp);
      // The pipeline took 40 s: the token is still fresh, and the outbox retries until 40 s + max_age.
      clock.ms = event.timestamp + 40_000;
      const replies = ['1', '2', '3', '4', '5', '6'].map((text) => ({ text }));
      fake.failNext('push', 1, { kind: 'http_status', status: 500 });
      await expect(sender.send(message, replies, AbortSignal.timeout(5_000), 't1')).rejects.toMatchObject({
        code: 'SB_CHANNEL_SEND_FAILED',
        retryable: true,
      });
      clock.ms = event.timestamp + MAX_AGE_MS + 10_000;
      await sender.send(message, replies, AbortSignal.timeout(5_000), 't1');
      expect(fake.deliveredTo(USER)).toEqual(['1', '2', '3', '4', '5', '6']);
    });
  });

  describe('when many reply tokens are held', () => {
    it('remembers each in constant time, not by sweeping all the others', () => {
      const clock = { ms: Date.now() };
      const sender = senderAt(clock);
      const started = performance.now();
      // Every token fresh: a sweep on each call would visit 50,000 × 50,000 / 2 entries (tens of seconds).
      for (let index = 0; index < 50_000; index += 1) sender.remember(`m${index}`, `t${index}`, clock.ms);
      expect(performance.now() - started).toBeLessThan(3_000);
    });

    it('pushes instead of replying with a token past its minute, whether or not it was swept', async () => {
      const { event, message } = received('late');
      const clock = { ms: event.timestamp };
      const sender = senderAt(clock);
      sender.remember(message.id, event.replyToken, event.timestamp);
      clock.ms = event.timestamp + 55_000;
      await sender.send(message, [{ text: 'pushed' }], AbortSignal.timeout(5_000), 't2');
      expect(fake.callsTo('reply')).toEqual([]);
      expect(fake.sent().map((sent) => [sent.via, sent.text])).toEqual([['push', 'pushed']]);
    });
  });
});
