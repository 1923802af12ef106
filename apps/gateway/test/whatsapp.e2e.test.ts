import { metricValueAt } from '@switchboard/testkit/prometheus';
import { type FakeWhatsApp, signWhatsAppBody, startFakeWhatsApp } from '@switchboard/testkit/whatsapp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ServeProcess, eventually, get, serveYaml } from './serve-process.js';

describe('whatsapp channel (end to end)', () => {
  let fake: FakeWhatsApp;
  let gateway: ServeProcess;
  let webhookUrl: string;

  beforeAll(async () => {
    fake = await startFakeWhatsApp();
    gateway = await serveYaml(`
audit: { ignored: true }
channels:
  - id: wa
    type: whatsapp
    phone_number_id: "${fake.phoneNumberId}"
    access_token: ${fake.accessToken}
    app_secret: ${fake.appSecret}
    verify_token: ${fake.verifyToken}
    api_url: "${fake.url}"
pipelines:
  - { id: echo, type: echo }
routing:
  default: echo
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
      await eventually(
        async () =>
          (await metricValueAt(
            gateway.url,
            'switchboard_messages_total{channel="wa",outcome="duplicate"}',
          )) === 1,
      );
      expect(fake.deliveredTo(from)).toEqual(['only once']);
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
