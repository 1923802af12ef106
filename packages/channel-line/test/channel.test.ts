import { recordingIngress } from '@switchboard/contracts';
import {
  type Ingress,
  type IngressResult,
  SwitchboardError,
  newMessageId,
  silentLogger,
} from '@switchboard/core';
import { eventually } from '@switchboard/testkit/eventually';
import { signLineBody } from '@switchboard/testkit/line';
import { afterEach, describe, expect, it } from 'vitest';
import { normalizeLineEvent } from '../src/inbound/normalize.js';
import { type LineGateway, type LineGatewayOptions, startLineGateway } from './harness.js';

const USER = `U${'01'.repeat(16)}`;
const GROUP = `C${'0a'.repeat(16)}`;
const QUEUED: IngressResult = { status: 'queued', pipeline: 'echo', session: 'line:ln:person:U', rule: null };

let gateway: LineGateway | undefined;
afterEach(async () => {
  await gateway?.stop();
  gateway = undefined;
});

async function start(options: LineGatewayOptions = {}): Promise<LineGateway> {
  gateway = await startLineGateway(options);
  return gateway;
}

/** The outcomes recorded so far, but the duplicates. */
function finalOutcomes(target: LineGateway) {
  return target.outcomes.filter((outcome) => outcome.kind !== 'duplicate');
}

describe('createLineChannel', () => {
  describe('when a user writes to the bot', () => {
    it('answers the webhook 200 and replies with the reply token', async () => {
      const { fake, webhookUrl } = await start();
      const answer = await fake.deliverWebhook(webhookUrl, [fake.textEvent({ text: 'hello' })]);
      expect(answer.status).toBe(200);
      expect(await fake.waitForDelivered(USER, 1)).toEqual(['echo: hello']);
      expect(fake.sent().map((sent) => sent.via)).toEqual(['reply']);
      expect(fake.callsTo('push')).toEqual([]);
    });
  });

  describe('when the signature does not match the channel secret, or is missing', () => {
    it.each([
      ['made with another secret', 'another-secret'],
      ['missing', null],
    ])('answers 401 when it is %s and takes nothing', async (_case, secret) => {
      const { fake, webhookUrl, outcomes } = await start();
      const event = fake.textEvent({ text: 'forged' });
      const raw = JSON.stringify({ destination: fake.botUserId, events: [event] });
      const answer = await fake.deliverWebhook(webhookUrl, raw, {
        signature: secret === null ? null : signLineBody(secret, raw),
      });
      expect(answer.status).toBe(401);
      expect(answer.body).toMatchObject({ error: { code: 'SB_HTTP_UNAUTHORIZED' } });
      expect(JSON.stringify(answer.body)).toContain('x-line-signature');
      expect(outcomes).toEqual([]);
    });

    it('answers 401 before reading a body that is not even JSON', async () => {
      const { fake, webhookUrl } = await start();
      const answer = await fake.deliverWebhook(webhookUrl, 'not json', { signature: 'AAAA' });
      expect(answer.status).toBe(401);
    });
  });

  describe('when a signed body is not a webhook body', () => {
    it('answers 400 naming the problem', async () => {
      const { fake, webhookUrl } = await start();
      const answer = await fake.deliverWebhook(webhookUrl, JSON.stringify({ destination: 'U1' }));
      expect(answer.status).toBe(400);
      expect(answer.body).toMatchObject({
        error: { code: 'SB_HTTP_BAD_REQUEST', message: 'body.events: expected an array' },
      });
    });
  });

  describe('when the console verifies the webhook (no events)', () => {
    it('answers 200', async () => {
      const { fake, webhookUrl } = await start();
      expect((await fake.deliverWebhook(webhookUrl, [])).status).toBe(200);
    });
  });

  describe('when LINE redelivers an event', () => {
    it('takes it once: one message, one answer', async () => {
      const { fake, webhookUrl, outcomes } = await start();
      const event = fake.textEvent({ text: 'once' });
      expect((await fake.deliverWebhook(webhookUrl, [event])).status).toBe(200);
      expect((await fake.deliverWebhook(webhookUrl, [fake.redelivery(event)])).status).toBe(200);
      await eventually(() => outcomes.some((outcome) => outcome.kind === 'duplicate'));
      await eventually(() => finalOutcomes(gateway as LineGateway).length === 1);
      expect(await fake.waitForDelivered(USER, 1)).toEqual(['echo: once']);
      expect(finalOutcomes(gateway as LineGateway)).toMatchObject([{ kind: 'completed' }]);
    });
  });

  describe('when one event of a batch is malformed', () => {
    it('skips it and takes the others', async () => {
      const { fake, webhookUrl } = await start();
      const bad = { ...fake.textEvent({ text: 'bad' }), source: { type: 'user' } };
      const answer = await fake.deliverWebhook(webhookUrl, [
        fake.textEvent({ text: 'first' }),
        bad,
        fake.textEvent({ text: 'third' }),
      ]);
      expect(answer.status).toBe(200);
      expect(await fake.waitForDelivered(USER, 2)).toEqual(['echo: first', 'echo: third']);
    });
  });

  describe('when an event is in standby mode or is not a message', () => {
    it('ignores it: no message, no answer', async () => {
      const { fake, webhookUrl, outcomes } = await start();
      const follow = { ...fake.textEvent({ text: 'x' }), type: 'follow', message: undefined };
      const answer = await fake.deliverWebhook(webhookUrl, [
        fake.textEvent({ text: 'standby', mode: 'standby' }),
        follow,
        fake.textEvent({ text: 'active' }),
      ]);
      expect(answer.status).toBe(200);
      expect(await fake.waitForDelivered(USER, 1)).toEqual(['echo: active']);
      expect(outcomes.map((outcome) => outcome.message.text)).toEqual(['active']);
    });
  });

  describe('when a group writes', () => {
    it('answers only messages that mention the bot', async () => {
      const { fake, webhookUrl, outcomes } = await start();
      const source = { type: 'group' as const, groupId: GROUP, userId: USER };
      await fake.deliverWebhook(webhookUrl, [
        fake.textEvent({ text: 'chatter', source }),
        fake.textEvent({ text: '@Switchboard hi', source, mentions: [{ self: true }] }),
        fake.textEvent({ text: '@ann hi', source, mentions: [{ userId: 'U0002' }] }),
      ]);
      expect(await fake.waitForDelivered(GROUP, 1)).toEqual(['echo: @Switchboard hi']);
      await eventually(() => outcomes.length === 3);
      expect(new Map(outcomes.map((outcome) => [outcome.message.text, outcome.kind]))).toEqual(
        new Map([
          ['chatter', 'ignored'],
          ['@Switchboard hi', 'completed'],
          ['@ann hi', 'ignored'],
        ]),
      );
    });
  });

  describe('when the reply token is no longer taken', () => {
    it('pushes the answer to the chat with a retry key instead', async () => {
      const { fake, webhookUrl } = await start();
      const event = fake.textEvent({ text: 'late' });
      fake.expireReplyTokens();
      await fake.deliverWebhook(webhookUrl, [event]);
      expect(await fake.waitForDelivered(USER, 1)).toEqual(['echo: late']);
      expect(fake.callsTo('reply').map((call) => call.status)).toEqual([400]);
      const [push] = fake.callsTo('push');
      expect(push?.body.to).toBe(USER);
      expect(push?.retryKey).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    });

    it('pushes at once when the event is older than a reply token lives', async () => {
      const { fake, webhookUrl } = await start();
      const event = fake.textEvent({ text: 'old', extra: { timestamp: Date.now() - 5 * 60_000 } });
      await fake.deliverWebhook(webhookUrl, [event]);
      expect(await fake.waitForDelivered(USER, 1)).toEqual(['echo: old']);
      expect(fake.callsTo('reply')).toEqual([]);
    });
  });

  describe('when the answer is longer than one call takes', () => {
    it('cuts texts at 5000 characters and sends 5 messages a call: the reply first, then pushes', async () => {
      const long = 'x'.repeat(12_000);
      const { fake, webhookUrl } = await start({ answer: () => [long, 'a', 'b', 'c', 'd'] });
      await fake.deliverWebhook(webhookUrl, [fake.textEvent({ text: 'long' })]);
      const texts = await fake.waitForDelivered(USER, 7);
      expect(texts.map((text) => text.length)).toEqual([5000, 5000, 2000, 1, 1, 1, 1]);
      expect(texts.join('')).toBe(`${long}abcd`);
      expect(fake.sent().map((sent) => sent.via)).toEqual([
        'reply',
        'reply',
        'reply',
        'reply',
        'reply',
        'push',
        'push',
      ]);
    });
  });

  describe('when the gateway cannot take an event', () => {
    const refused: IngressResult = { status: 'refused', reason: 'queue_full', retryAfterMs: 2_000 };

    it('answers 503 with Retry-After when LINE redelivers (webhook_redelivery on)', async () => {
      const recording = recordingIngress(async () => refused);
      const { fake, webhookUrl } = await start({
        ingress: recording.ingress,
        config: { webhook_redelivery: true },
      });
      const answer = await fake.deliverWebhook(webhookUrl, [fake.textEvent({ text: 'full' })]);
      expect(answer.status).toBe(503);
      expect(answer.headers.get('retry-after')).toBe('2');
      expect(answer.body).toMatchObject({ error: { code: 'SB_QUEUE_FULL' } });
      expect(recording.drops).toEqual([]);
    });

    it('records it as dropped and answers 200 when LINE would not redeliver (the default)', async () => {
      const recording = recordingIngress(async () => refused);
      const { fake, webhookUrl } = await start({ ingress: recording.ingress });
      const answer = await fake.deliverWebhook(webhookUrl, [fake.textEvent({ text: 'full' })]);
      expect(answer.status).toBe(200);
      expect(recording.drops.map((drop) => [drop.message.text, drop.reason])).toEqual([['full', 'refused']]);
    });

    it('records a failed ingress as dropped too, without redelivery', async () => {
      const failure = new SwitchboardError('SB_STORE_UNAVAILABLE', { message: 'store down' });
      const recording = recordingIngress(async () => {
        throw failure;
      });
      const { fake, webhookUrl } = await start({ ingress: recording.ingress });
      const answer = await fake.deliverWebhook(webhookUrl, [fake.textEvent({ text: 'lost' })]);
      expect(answer.status).toBe(200);
      expect(recording.drops).toMatchObject([{ reason: 'ingress_failed', error: failure }]);
    });
  });

  describe('when one event of a batch is refused', () => {
    /** The engine's ingress, refusing the first delivery of the message `text` once. */
    function refusingOnce(text: string) {
      let refused = false;
      return (engine: Ingress): Ingress => ({
        accept(message, deliveryId, options) {
          if (message.text !== text || refused) return engine.accept(message, deliveryId, options);
          refused = true;
          return Promise.resolve({ status: 'refused', reason: 'queue_full', retryAfterMs: 1_000 });
        },
        drop: (message, reason, error) => engine.drop(message, reason, error),
      });
    }

    it('answers 503 at it and takes every event once when LINE redelivers the request', async () => {
      const { fake, webhookUrl, outcomes } = await start({
        config: { webhook_redelivery: true },
        wrapIngress: refusingOnce('B'),
      });
      const events = ['A', 'B', 'C'].map((text) => fake.textEvent({ text }));
      expect((await fake.deliverWebhook(webhookUrl, events)).status).toBe(503);
      const again = events.map((event) => fake.redelivery(event));
      expect((await fake.deliverWebhook(webhookUrl, again)).status).toBe(200);
      expect(await fake.waitForDelivered(USER, 3)).toEqual(['echo: A', 'echo: B', 'echo: C']);
      await eventually(() => finalOutcomes(gateway as LineGateway).length === 3);
      expect(outcomes.map((outcome) => [outcome.message.text, outcome.kind])).toEqual([
        ['A', 'completed'],
        ['A', 'duplicate'],
        ['B', 'completed'],
        ['C', 'completed'],
      ]);
    });

    it('records it as dropped and takes the others without redelivery', async () => {
      const { fake, webhookUrl, outcomes } = await start({ wrapIngress: refusingOnce('B') });
      const events = ['A', 'B', 'C'].map((text) => fake.textEvent({ text }));
      expect((await fake.deliverWebhook(webhookUrl, events)).status).toBe(200);
      expect(await fake.waitForDelivered(USER, 2)).toEqual(['echo: A', 'echo: C']);
      await eventually(() => outcomes.length === 3);
      expect(new Map(outcomes.map((outcome) => [outcome.message.text, outcome.kind]))).toEqual(
        new Map([
          ['A', 'completed'],
          ['B', 'dropped'],
          ['C', 'completed'],
        ]),
      );
    });
  });

  describe('before start', () => {
    it('answers 503 and reports not ready', async () => {
      const { fake, webhookUrl, channel } = await start({ started: false });
      const answer = await fake.deliverWebhook(webhookUrl, [fake.textEvent({ text: 'early' })]);
      expect(answer.status).toBe(503);
      expect(answer.body).toMatchObject({ error: { code: 'SB_DRAINING' } });
      expect(channel.health()).toMatchObject({ ready: false });
    });
  });

  describe('when the channel access token is refused at start', () => {
    it('fails with SB_CHANNEL_AUTH_FAILED naming the setting, never the token', async () => {
      const { fake, channel } = await start({
        started: false,
        config: { channel_access_token: 'wrong-token-1234' },
      });
      const { ingress } = recordingIngress(async () => QUEUED);
      const failure = await channel.start({ ingress, logger: silentLogger }).catch((error: unknown) => error);
      expect(failure).toMatchObject({ code: 'SB_CHANNEL_AUTH_FAILED' });
      expect((failure as Error).message).toContain('channels[ln].channel_access_token');
      expect(JSON.stringify(failure)).not.toContain('wrong-token-1234');
      expect(fake.callsTo('info')).toHaveLength(1);
    });
  });
});

describe('LINE channel send', () => {
  /** A message the channel took from `event`, as the reply sender hands it back. */
  function originOf(event: Record<string, unknown>) {
    const message = normalizeLineEvent(event, {
      channelId: 'ln',
      messageId: newMessageId(),
      receivedAt: Date.now(),
      maxMediaBytes: 25_000_000,
    });
    if (message === null) throw new Error('not a message');
    return message;
  }

  describe('when a push was taken by LINE but its answer never came', () => {
    it('sends it once: the retried push carries the same retry key and its 409 counts as sent', async () => {
      const { fake, channel } = await start();
      const origin = originOf(fake.textEvent({ text: 'hi' }));
      fake.failNext('push', 1, { kind: 'accept_then_hang' });
      const first = channel.send(origin, [{ text: 'answer' }], AbortSignal.timeout(300), { turn: 't1' });
      await expect(first).rejects.toThrow();
      await channel.send(origin, [{ text: 'answer' }], AbortSignal.timeout(5_000), { turn: 't1' });
      expect(fake.deliveredTo(USER)).toEqual(['answer']);
      const pushes = fake.callsTo('push');
      expect(pushes.map((call) => call.status)).toEqual([null, 409]);
      expect(pushes[1]?.retryKey).toBe(pushes[0]?.retryKey);
    });
  });

  describe('when a reply went through and a later push of the same send failed', () => {
    it('retries without replying again, and every message arrives once', async () => {
      const recording = recordingIngress(async () => QUEUED);
      const { fake, channel, webhookUrl } = await start({ ingress: recording.ingress });
      await fake.deliverWebhook(webhookUrl, [fake.textEvent({ text: 'hi' })]);
      const [origin] = recording.accepted;
      if (origin === undefined) throw new Error('nothing accepted');
      const replies = ['1', '2', '3', '4', '5', '6'].map((text) => ({ text }));
      fake.failNext('push', 1, { kind: 'http_status', status: 500 });
      const first = channel.send(origin, replies, AbortSignal.timeout(5_000), { turn: 't2' });
      await expect(first).rejects.toMatchObject({ code: 'SB_CHANNEL_SEND_FAILED', retryable: true });
      await channel.send(origin, replies, AbortSignal.timeout(5_000), { turn: 't2' });
      expect(fake.deliveredTo(USER)).toEqual(['1', '2', '3', '4', '5', '6']);
      expect(fake.sent().map((sent) => sent.via)).toEqual([
        'reply',
        'reply',
        'reply',
        'reply',
        'reply',
        'push',
      ]);
      expect(fake.callsTo('reply')).toHaveLength(1);
    });
  });

  describe('when the message came to another process', () => {
    it('pushes: this one knows no reply token for it', async () => {
      const { fake, channel } = await start();
      const origin = originOf(fake.textEvent({ text: 'hi' }));
      await channel.send(origin, [{ text: 'pushed' }], AbortSignal.timeout(5_000), { turn: 't3' });
      expect(fake.sent().map((sent) => [sent.via, sent.text])).toEqual([['push', 'pushed']]);
    });
  });

  describe('when LINE answers 429', () => {
    it('fails with a retryable SB_CHANNEL_RATE_LIMITED', async () => {
      const { fake, channel } = await start();
      const origin = originOf(fake.textEvent({ text: 'hi' }));
      fake.failNext('push', 1, { kind: 'rate_limited' });
      const failure = await channel
        .send(origin, [{ text: 'x' }], AbortSignal.timeout(5_000))
        .catch((error: unknown) => error);
      expect(failure).toMatchObject({ code: 'SB_CHANNEL_RATE_LIMITED', retryable: true });
      expect(fake.deliveredTo(USER)).toEqual([]);
    });
  });

  describe('when the monthly message limit is reached (429 "You have reached your monthly limit.")', () => {
    it('fails with a final SB_CHANNEL_SEND_FAILED naming the monthly limit, after one push', async () => {
      const { fake, channel } = await start();
      const origin = originOf(fake.textEvent({ text: 'hi' }));
      fake.failNext('push', 1, { kind: 'monthly_limit' });
      const failure = await channel
        .send(origin, [{ text: 'x' }], AbortSignal.timeout(5_000))
        .catch((error: unknown) => error);
      expect(failure).toMatchObject({
        code: 'SB_CHANNEL_SEND_FAILED',
        retryable: false,
        details: { status: 429, description: 'You have reached your monthly limit.' },
      });
      expect((failure as Error).message).toContain(
        'the monthly message limit of the LINE Official Account is reached',
      );
      expect((failure as Error).message).not.toContain(fake.channelAccessToken);
      expect(fake.callsTo('push').map((call) => call.status)).toEqual([429]);
      expect(fake.deliveredTo(USER)).toEqual([]);
    });
  });

  describe('when LINE never answers', () => {
    it('rejects with the deadline once the signal aborts', async () => {
      const { fake, channel } = await start();
      const origin = originOf(fake.textEvent({ text: 'hi' }));
      fake.failNext('push', 1, { kind: 'hang' });
      const deadline = new AbortController();
      const sending = channel.send(origin, [{ text: 'x' }], deadline.signal);
      await eventually(() => fake.callsTo('push').length === 1);
      const reason = new Error('deadline');
      deadline.abort(reason);
      await expect(sending).rejects.toBe(reason);
    });
  });
});
