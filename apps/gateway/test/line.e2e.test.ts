import { metricValueAt } from '@switchboard/testkit/prometheus';
import { type FakeLine, signLineBody, startFakeLine } from '@switchboard/testkit/line';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ServeProcess, eventually, get, outcomeCount, serveEchoChannels } from './serve-process.js';

const USER = `U${'0c'.repeat(16)}`;
const GROUP = `C${'0d'.repeat(16)}`;

describe('line channel (end to end)', () => {
  let fake: FakeLine;
  let gateway: ServeProcess;
  let webhookUrl: string;

  beforeAll(async () => {
    fake = await startFakeLine();
    gateway = await serveEchoChannels(`
  - id: ln
    type: line
    channel_secret: ${fake.channelSecret}
    channel_access_token: ${fake.channelAccessToken}
    api_url: "${fake.url}"
`);
    webhookUrl = `${gateway.url}/line/ln`;
  });
  afterAll(async () => {
    await gateway?.stop('SIGKILL');
    await fake?.close();
  });

  describe('when the gateway starts', () => {
    it('checks the access token with GET /v2/bot/info and reports the channel ready', async () => {
      expect(fake.callsTo('info').map((call) => [call.token, call.status])).toEqual([
        [fake.channelAccessToken, 200],
      ]);
      const ready = await get(`${gateway.url}/readyz`);
      expect(ready.status).toBe(200);
    });
  });

  describe('when a user writes to the bot', () => {
    it('answers through the echo pipeline with the reply token', async () => {
      const source = { type: 'user' as const, userId: USER };
      const answer = await fake.deliverWebhook(webhookUrl, [fake.textEvent({ text: 'hello line', source })]);
      expect(answer.status).toBe(200);
      expect(await fake.waitForDelivered(USER, 1)).toEqual(['hello line']);
      const [reply] = fake.callsTo('reply');
      expect(reply?.token).toBe(fake.channelAccessToken);
      expect(fake.callsTo('push')).toEqual([]);
    });
  });

  describe('when LINE redelivers an event it already sent', () => {
    it('answers once', async () => {
      const source = { type: 'user' as const, userId: `U${'0e'.repeat(16)}` };
      const event = fake.textEvent({ text: 'only once', source });
      expect((await fake.deliverWebhook(webhookUrl, [event])).status).toBe(200);
      expect((await fake.deliverWebhook(webhookUrl, [fake.redelivery(event)])).status).toBe(200);
      expect(await fake.waitForDelivered(source.userId, 1)).toEqual(['only once']);
      await eventually(async () => (await outcomeCount(gateway, 'ln', 'duplicate')) === 1);
      expect(fake.deliveredTo(source.userId)).toEqual(['only once']);
    });
  });

  describe('when a group writes', () => {
    it('answers the mention of the bot and ignores the rest', async () => {
      const source = { type: 'group' as const, groupId: GROUP, userId: USER };
      await fake.deliverWebhook(webhookUrl, [
        fake.textEvent({ text: 'just chatting', source }),
        fake.textEvent({ text: '@Switchboard ping', source, mentions: [{ self: true }] }),
      ]);
      expect(await fake.waitForDelivered(GROUP, 1)).toEqual(['@Switchboard ping']);
      const audit = await get(`${gateway.url}/admin/audit?outcome=ignored&channel=ln`);
      expect(audit.body.items).toContainEqual(
        expect.objectContaining({ reason: 'not_mentioned', chat_id: GROUP, platform: 'line' }),
      );
    });
  });

  describe("when a message comes from the bot's own user id", () => {
    it("is ignored as the bot's own, and the next message is answered", async () => {
      const room = `C${'0f'.repeat(16)}`;
      const bot = { type: 'group' as const, groupId: room, userId: fake.botUserId };
      const user = { type: 'group' as const, groupId: room, userId: USER };
      await fake.deliverWebhook(webhookUrl, [
        fake.textEvent({ text: '@Switchboard echo me', source: bot, mentions: [{ self: true }] }),
        fake.textEvent({ text: '@Switchboard after', source: user, mentions: [{ self: true }] }),
      ]);
      expect(await fake.waitForDelivered(room, 1)).toEqual(['@Switchboard after']);
      const audit = await get(`${gateway.url}/admin/audit?outcome=ignored&channel=ln`);
      expect(audit.body.items).toContainEqual(
        expect.objectContaining({ reason: 'bot_author', chat_id: room, platform: 'line' }),
      );
    });
  });

  describe('when the console verifies the webhook URL', () => {
    it('answers the signed request without events 200', async () => {
      expect((await fake.deliverWebhook(webhookUrl, [])).status).toBe(200);
    });
  });

  describe('when LINE answers 429', () => {
    it('delivers the answer later, once', async () => {
      const source = { type: 'user' as const, userId: `U${'0f'.repeat(16)}` };
      const event = fake.textEvent({ text: 'limited', source });
      fake.failNext('reply', 1, { kind: 'rate_limited' });
      await fake.deliverWebhook(webhookUrl, [event]);
      expect(await fake.waitForDelivered(source.userId, 1)).toEqual(['limited']);
      // The refused reply is tried again as a push (whether the reply went through is not known).
      const tries = fake.calls.filter(
        (call) => call.body.replyToken === event.replyToken || call.body.to === source.userId,
      );
      expect(tries.map((call) => [call.endpoint, call.status])).toEqual([
        ['reply', 429],
        ['push', 200],
      ]);
      expect(fake.deliveredTo(source.userId)).toEqual(['limited']);
    });
  });

  describe('when the monthly message limit is reached', () => {
    it('dead-letters the pushed answer at once, naming the monthly limit, without retrying', async () => {
      const source = { type: 'user' as const, userId: `U${'11'.repeat(16)}` };
      const event = fake.textEvent({ text: 'over quota', source });
      fake.failNext('reply', 1, { kind: 'http_status', status: 400, message: 'Invalid reply token' });
      fake.failNext('push', 1, { kind: 'monthly_limit' });
      expect((await fake.deliverWebhook(webhookUrl, [event])).status).toBe(200);
      const audit = await eventually(async () => {
        const page = await get(`${gateway.url}/admin/audit?outcome=dead_lettered&channel=ln`);
        return page.body.items?.length > 0 && page.body;
      });
      expect(audit.items[0]).toMatchObject({ reason: 'delivery_failed' });
      expect(audit.items[0].error).toContain(
        'the monthly message limit of the LINE Official Account is reached',
      );
      expect(
        fake
          .callsTo('push')
          .filter((call) => call.body.to === source.userId)
          .map((call) => call.status),
      ).toEqual([429]);
      expect(await metricValueAt(gateway.url, 'switchboard_outbox_pending{channel="ln"}')).toBe(0);
      expect(JSON.stringify(audit)).not.toContain(fake.channelAccessToken);
    });
  });

  describe('when the answer is longer than LINE takes in one message', () => {
    it('sends it cut at 5,000 characters, in order, 5 messages a call', async () => {
      const source = { type: 'user' as const, userId: `U${'10'.repeat(16)}` };
      const long = Array.from({ length: 4_000 }, (_, index) => `word${index}`).join(' ');
      await fake.deliverWebhook(webhookUrl, [fake.textEvent({ text: long, source })]);
      const parts = await eventually(() => {
        const texts = fake.deliveredTo(source.userId);
        return texts.join(' ') === long && texts;
      });
      expect(parts.length).toBeGreaterThan(5);
      expect(parts.every((part) => part.length <= 5_000)).toBe(true);
      const vias = fake
        .sent()
        .filter((sent) => sent.to === source.userId)
        .map((sent) => sent.via);
      expect(vias).toEqual(parts.map((_, index) => (index < 5 ? 'reply' : 'push')));
    });
  });

  describe('when a request is not signed with the channel secret', () => {
    it('answers 401 and answers nothing', async () => {
      const raw = JSON.stringify({
        destination: fake.botUserId,
        events: [fake.textEvent({ text: 'forged' })],
      });
      const answer = await fake.deliverWebhook(webhookUrl, raw, {
        signature: signLineBody('not-the-secret', raw),
      });
      expect(answer.status).toBe(401);
      expect(answer.body).toMatchObject({ error: { code: 'SB_HTTP_UNAUTHORIZED' } });
      expect(fake.sent().map((sent) => sent.text)).not.toContain('forged');
    });
  });
});
