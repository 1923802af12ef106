import { metricValueAt } from '@switchboard/testkit/prometheus';
import { type FakeWhatsApp, signWhatsAppBody, startFakeWhatsApp } from '@switchboard/testkit/whatsapp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ServeProcess, eventually, get, outcomeCount, serveEchoChannels } from './serve-process.js';

describe('whatsapp channel (end to end)', () => {
  let fake: FakeWhatsApp;
  let gateway: ServeProcess;
  let webhookUrl: string;

  beforeAll(async () => {
    fake = await startFakeWhatsApp();
    gateway = await serveEchoChannels(`
  - id: wa
    type: whatsapp
    phone_number_id: "${fake.phoneNumberId}"
    access_token: ${fake.accessToken}
    app_secret: ${fake.appSecret}
    verify_token: ${fake.verifyToken}
    api_url: "${fake.url}"
`);
    webhookUrl = `${gateway.url}/whatsapp/wa`;
  });
  afterAll(async () => {
    await gateway?.stop('SIGKILL');
    await fake?.close();
  });

  describe('when Meta verifies the callback URL', () => {
    it('echoes the challenge for the configured verify token, and reports the channel ready', async () => {
      expect(await fake.verifySubscription(webhookUrl, { challenge: '31337' })).toEqual({
        status: 200,
        body: '31337',
      });
      expect((await fake.verifySubscription(webhookUrl, { verifyToken: 'guess' })).status).toBe(403);
      expect((await get(`${gateway.url}/readyz`)).status).toBe(200);
    });
  });

  describe('when a user writes to the business number', () => {
    it('answers through the echo pipeline with the Cloud API', async () => {
      const from = '4915112345678';
      const notification = fake.notification(fake.textMessage({ text: 'hello whatsapp', from }));
      expect((await fake.deliverWebhook(webhookUrl, notification)).status).toBe(200);
      expect(await fake.waitForDelivered(from, 1)).toEqual(['hello whatsapp']);
      const call = fake.calls.find((entry) => entry.body.to === from);
      expect(call).toMatchObject({
        path: `/v21.0/${fake.phoneNumberId}/messages`,
        token: fake.accessToken,
        status: 200,
      });
    });
  });

  describe('when Meta redelivers a notification it already sent', () => {
    it('answers once', async () => {
      const from = '4915187654321';
      const notification = fake.notification(fake.textMessage({ text: 'only once', from }));
      expect((await fake.deliverWebhook(webhookUrl, notification)).status).toBe(200);
      expect((await fake.deliverWebhook(webhookUrl, notification)).status).toBe(200);
      expect(await fake.waitForDelivered(from, 1)).toEqual(['only once']);
      await eventually(async () => (await outcomeCount(gateway, 'wa', 'duplicate')) === 1);
      expect(fake.deliveredTo(from)).toEqual(['only once']);
    });
  });

  describe('when the user taps a reply button', () => {
    it('answers the title, which routing saw as the text', async () => {
      const from = '4915111111111';
      const tap = fake.message({
        type: 'interactive',
        part: { type: 'button_reply', button_reply: { id: 'yes', title: 'Yes, please' } },
        from,
        replyTo: 'wamid.ASK',
      });
      expect((await fake.deliverWebhook(webhookUrl, fake.notification(tap))).status).toBe(200);
      expect(await fake.waitForDelivered(from, 1)).toEqual(['Yes, please']);
    });
  });

  describe("when the business's own messages come back", () => {
    it('answers neither an echo nor a message from its own number, and answers the next user', async () => {
      const business = '15550783881';
      const from = '4915177777777';
      // Messages sent from the WhatsApp Business app come as `smb_message_echoes` (coexistence).
      const echo = fake.notification();
      echo.entry[0].changes = [
        {
          field: 'smb_message_echoes',
          value: {
            messaging_product: 'whatsapp',
            metadata: { display_phone_number: business, phone_number_id: fake.phoneNumberId },
            message_echoes: [
              { from: business, to: from, id: 'wamid.ECHO', type: 'text', text: { body: 'echo' } },
            ],
          },
        },
      ];
      expect((await fake.deliverWebhook(webhookUrl, echo)).status).toBe(200);
      const own = fake.notification(fake.textMessage({ text: 'from the business', from: business }));
      expect((await fake.deliverWebhook(webhookUrl, own)).status).toBe(200);
      const next = fake.notification(fake.textMessage({ text: 'after', from }));
      expect((await fake.deliverWebhook(webhookUrl, next)).status).toBe(200);
      expect(await fake.waitForDelivered(from, 1)).toEqual(['after']);
      await eventually(async () => (await outcomeCount(gateway, 'wa', 'ignored')) === 1);
      expect(fake.deliveredTo(business)).toEqual([]);
    });
  });

  describe('when Meta reports delivery statuses', () => {
    it('acknowledges them and runs no turn', async () => {
      const from = '4915122222222';
      const messagesBefore = await metricValueAt(gateway.url, 'switchboard_messages_total{channel="wa"}');
      const statuses = fake.notification(fake.status('wamid.SENT', from, 'read'));
      expect((await fake.deliverWebhook(webhookUrl, statuses)).status).toBe(200);
      // A message after it is answered: the status before it was taken, or skipped, by then.
      const after = fake.notification(fake.textMessage({ text: 'after the status', from }));
      expect((await fake.deliverWebhook(webhookUrl, after)).status).toBe(200);
      expect(await fake.waitForDelivered(from, 1)).toEqual(['after the status']);
      expect(await metricValueAt(gateway.url, 'switchboard_messages_total{channel="wa"}')).toBe(
        messagesBefore + 1,
      );
      expect(fake.deliveredTo(from)).toEqual(['after the status']);
    });
  });

  describe('when the Cloud API answers a rate limit', () => {
    it('delivers the reply later, once', async () => {
      const from = '4915133333333';
      // Throughput limit as Meta often answers it: HTTP 400 with code 130429 (a 1 s wait).
      fake.failNext(1, { kind: 'rate_limited', code: 130429, status: 400 });
      const notification = fake.notification(fake.textMessage({ text: 'after the limit', from }));
      expect((await fake.deliverWebhook(webhookUrl, notification)).status).toBe(200);
      expect(await fake.waitForDelivered(from, 1)).toEqual(['after the limit']);
      await eventually(
        async () => (await metricValueAt(gateway.url, 'switchboard_outbox_pending{channel="wa"}')) === 0,
      );
      const sends = fake.calls.filter((call) => call.body.to === from);
      expect(sends.map((call) => call.status)).toEqual([400, 200]);
      expect(sends[1]?.at).toBeGreaterThanOrEqual((sends[0]?.at ?? 0) + 900);
      expect(fake.deliveredTo(from)).toEqual(['after the limit']);
    });
  });

  describe('when a reply is longer than 4096 characters', () => {
    it('sends it as several messages, in order', async () => {
      const from = '4915144444444';
      const long = `${'a'.repeat(4096)}${'b'.repeat(4096)}c`;
      const notification = fake.notification(fake.textMessage({ text: long, from }));
      expect((await fake.deliverWebhook(webhookUrl, notification)).status).toBe(200);
      expect(await fake.waitForDelivered(from, 3)).toEqual(['a'.repeat(4096), 'b'.repeat(4096), 'c']);
    });
  });

  describe("when the second of a reply's messages fails", () => {
    it('sends each message once when the outbox tries the reply again', async () => {
      const from = '4915166666666';
      const long = `${'d'.repeat(4096)}e`;
      fake.failNext(1, { kind: 'http_status', status: 500 }, { after: 1 });
      const notification = fake.notification(fake.textMessage({ text: long, from }));
      expect((await fake.deliverWebhook(webhookUrl, notification)).status).toBe(200);
      expect(await fake.waitForDelivered(from, 2)).toEqual(['d'.repeat(4096), 'e']);
      await eventually(
        async () => (await metricValueAt(gateway.url, 'switchboard_outbox_pending{channel="wa"}')) === 0,
      );
      const sends = fake.calls.filter((call) => call.body.to === from);
      expect(sends.map((call) => call.status)).toEqual([200, 500, 200]);
      expect(fake.deliveredTo(from)).toEqual(['d'.repeat(4096), 'e']);
    });
  });

  describe('when the user last wrote more than 24 hours ago (131047)', () => {
    it('dead-letters the reply at once, naming the customer-service window, without retrying', async () => {
      const from = '4915155555555';
      fake.failNext(1, { kind: 'outside_window' });
      const notification = fake.notification(fake.textMessage({ text: 'too late', from }));
      expect((await fake.deliverWebhook(webhookUrl, notification)).status).toBe(200);
      const audit = await eventually(async () => {
        const page = await get(`${gateway.url}/admin/audit?outcome=dead_lettered&channel=wa`);
        return page.body.items?.length > 0 && page.body;
      });
      expect(audit.items[0]).toMatchObject({ reason: 'delivery_failed' });
      expect(audit.items[0].error).toContain('outside the 24-hour customer-service window');
      expect(fake.calls.filter((call) => call.body.to === from).map((call) => call.status)).toEqual([400]);
      expect(await metricValueAt(gateway.url, 'switchboard_outbox_pending{channel="wa"}')).toBe(0);
      expect(JSON.stringify(audit)).not.toContain(fake.accessToken);
    });
  });

  describe('when a notification is not signed with the app secret', () => {
    it('answers 401 and answers nothing', async () => {
      const raw = JSON.stringify(
        fake.notification(fake.textMessage({ text: 'forged', from: '4915100000000' })),
      );
      const answer = await fake.deliverWebhook(webhookUrl, raw, {
        signature: signWhatsAppBody('not-the-secret', raw),
      });
      expect(answer.status).toBe(401);
      expect(answer.body).toMatchObject({ error: { code: 'SB_HTTP_UNAUTHORIZED' } });
      expect(fake.deliveredTo('4915100000000')).toEqual([]);
    });
  });
});
