import { recordingIngress } from '@switchboard/contracts';
import { type IngressResult, type Logger, silentLogger } from '@switchboard/core';
import { eventually } from '@switchboard/testkit/eventually';
import { signWhatsAppBody } from '@switchboard/testkit/whatsapp';
import { afterEach, describe, expect, it } from 'vitest';
import { type WhatsAppGateway, type WhatsAppGatewayOptions, startWhatsAppGateway } from './harness.js';

const USER = '16505551234';
const QUEUED: IngressResult = { status: 'queued', pipeline: 'echo', session: 's', rule: null };

let gateway: WhatsAppGateway | undefined;
afterEach(async () => {
  await gateway?.stop();
  gateway = undefined;
});

async function start(options: WhatsAppGatewayOptions = {}): Promise<WhatsAppGateway> {
  gateway = await startWhatsAppGateway(options);
  return gateway;
}

function warningLogger() {
  const warnings: Array<Record<string, unknown>> = [];
  const logger: Logger = {
    ...silentLogger,
    warn: (bindings, msg) => {
      warnings.push({ ...bindings, msg });
    },
    child: () => logger,
  };
  return { logger, warnings };
}

describe('createWhatsAppChannel', () => {
  describe('when a user writes a text message', () => {
    it('answers 200 and sends the echo to the sender through the Cloud API', async () => {
      const { fake, webhookUrl } = await start();
      const answer = await fake.deliverWebhook(
        webhookUrl,
        fake.notification(fake.textMessage({ text: 'hello' })),
      );
      expect(answer.status).toBe(200);
      expect(await fake.waitForDelivered(USER, 1)).toEqual(['echo: hello']);
      expect(fake.calls[0]).toMatchObject({
        method: 'POST',
        path: `/v21.0/${fake.phoneNumberId}/messages`,
        token: fake.accessToken,
        body: { messaging_product: 'whatsapp', to: USER, type: 'text', text: { body: 'echo: hello' } },
      });
    });

    it('makes one direct message of it: session per sender, the profile name, the wamid', async () => {
      const { ingress, accepted } = recordingIngress(async () => QUEUED);
      const { fake, webhookUrl } = await start({ ingress });
      const value = fake.textMessage({ text: 'hi', name: 'Ana' });
      await fake.deliverWebhook(webhookUrl, fake.notification(value));
      expect(accepted).toMatchObject([
        {
          platform: 'whatsapp',
          channel: 'wa',
          chat: { type: 'person', id: USER },
          sender: { id: USER, name: 'Ana', is_bot: false },
          text: 'hi',
          platform_message_id: value.messages?.[0]?.id,
        },
      ]);
    });
  });

  describe('when a user sends media, a location or taps a reply button', () => {
    it('takes each with its elements, the tapped title as the text', async () => {
      const { ingress, accepted } = recordingIngress(async () => QUEUED);
      const { fake, webhookUrl } = await start({ ingress });
      const notification = fake.notification(
        fake.message({ type: 'image', part: { id: '1479537139650973', caption: 'this one' } }),
        fake.message({ type: 'audio', part: { id: '1003383421387256', voice: true } }),
        fake.message({ type: 'document', part: { id: '1376223850470843', filename: 'invoice.pdf' } }),
        fake.message({ type: 'location', part: { latitude: 37.4848, longitude: -122.1484 } }),
        fake.message({
          type: 'interactive',
          part: { type: 'button_reply', button_reply: { id: 'yes', title: 'Yes, please' } },
          replyTo: 'wamid.ASK',
        }),
      );
      expect((await fake.deliverWebhook(webhookUrl, notification)).status).toBe(200);
      expect(accepted.map((message) => [message.text, message.elements])).toEqual([
        [
          'this one',
          [
            { type: 'text', text: 'this one' },
            { type: 'image', file_id: '1479537139650973' },
          ],
        ],
        ['', [{ type: 'voice', file_id: '1003383421387256' }]],
        ['', [{ type: 'file', file_id: '1376223850470843', name: 'invoice.pdf' }]],
        ['', [{ type: 'location', latitude: 37.4848, longitude: -122.1484 }]],
        [
          'Yes, please',
          [
            { type: 'text', text: 'Yes, please' },
            { type: 'quote', message_id: 'wamid.ASK' },
          ],
        ],
      ]);
    });
  });

  describe('when the signature does not match the app secret, or is missing', () => {
    it.each([
      ['made with another secret', 'another-secret'],
      ['missing', null],
    ])('answers 401 when it is %s and takes nothing', async (_case, secret) => {
      const { ingress, accepted } = recordingIngress(async () => QUEUED);
      const { fake, webhookUrl } = await start({ ingress });
      const raw = JSON.stringify(fake.notification(fake.textMessage({ text: 'forged' })));
      const answer = await fake.deliverWebhook(webhookUrl, raw, {
        signature: secret === null ? null : signWhatsAppBody(secret, raw),
      });
      expect(answer.status).toBe(401);
      expect(answer.body).toMatchObject({ error: { code: 'SB_HTTP_UNAUTHORIZED' } });
      expect(JSON.stringify(answer.body)).toContain('channels[wa].app_secret');
      expect(accepted).toEqual([]);
    });

    it('answers 401 before reading a body that is not even JSON', async () => {
      const { fake, webhookUrl } = await start();
      const answer = await fake.deliverWebhook(webhookUrl, 'not json', { signature: 'sha256=00' });
      expect(answer.status).toBe(401);
    });
  });

  describe('when a signed body is malformed', () => {
    it.each([
      ['not JSON', 'not json'],
      ['another object', JSON.stringify({ object: 'page', entry: [] })],
      ['entries that are no list', JSON.stringify({ object: 'whatsapp_business_account', entry: {} })],
    ])('answers 200 (Meta would retry it for days) and warns: %s', async (_case, raw) => {
      const { logger, warnings } = warningLogger();
      const { fake, webhookUrl } = await start({ logger });
      const answer = await fake.deliverWebhook(webhookUrl, raw);
      expect(answer.status).toBe(200);
      expect(warnings).toMatchObject([{ msg: 'malformed webhook body acknowledged' }]);
    });
  });

  describe('when one change of a notification is malformed', () => {
    it('skips that change with a warning and takes the messages of the others', async () => {
      const { ingress, accepted } = recordingIngress(async () => QUEUED);
      const { logger, warnings } = warningLogger();
      const { fake, webhookUrl } = await start({ ingress, logger });
      const notification = fake.notification(
        fake.textMessage({ text: 'first' }),
        fake.textMessage({ text: 'lost' }),
        fake.textMessage({ text: 'third' }),
      );
      delete notification.entry[0].changes[1].value.metadata;
      const answer = await fake.deliverWebhook(webhookUrl, notification);
      expect(answer.status).toBe(200);
      expect(accepted.map((message) => message.text)).toEqual(['first', 'third']);
      expect(warnings).toMatchObject([
        {
          msg: 'malformed whatsapp change skipped',
          problem: expect.stringContaining('entry[0].changes[1]'),
        },
      ]);
    });
  });

  describe('when Meta redelivers a notification', () => {
    it('takes it once: one message, one answer', async () => {
      const { fake, webhookUrl, outcomes } = await start();
      const notification = fake.notification(fake.textMessage({ text: 'once' }));
      expect((await fake.deliverWebhook(webhookUrl, notification)).status).toBe(200);
      expect((await fake.deliverWebhook(webhookUrl, notification)).status).toBe(200);
      await eventually(() => outcomes.some((outcome) => outcome.kind === 'duplicate'));
      await eventually(() => outcomes.some((outcome) => outcome.kind === 'completed'));
      expect(await fake.waitForDelivered(USER, 1)).toEqual(['echo: once']);
      expect(outcomes.filter((outcome) => outcome.kind !== 'duplicate')).toMatchObject([
        { kind: 'completed' },
      ]);
    });
  });

  describe('when a notification carries statuses, other kinds or another phone number', () => {
    it('takes only the messages of kinds it answers, of the configured number', async () => {
      const { ingress, accepted } = recordingIngress(async () => QUEUED);
      const { fake, webhookUrl } = await start({ ingress });
      const sticker = fake.message({ type: 'sticker', part: { id: '1', mime_type: 'image/webp' } });
      const other = fake.notification(fake.textMessage({ text: 'other number' }));
      other.entry[0].changes[0].value.metadata.phone_number_id = '999';
      const answers = [
        await fake.deliverWebhook(
          webhookUrl,
          fake.notification(fake.status('wamid.X', USER, 'read'), sticker),
        ),
        await fake.deliverWebhook(webhookUrl, other),
        await fake.deliverWebhook(webhookUrl, fake.notification(fake.textMessage({ text: 'taken' }))),
      ];
      expect(answers.map((answer) => answer.status)).toEqual([200, 200, 200]);
      expect(accepted.map((message) => message.text)).toEqual(['taken']);
    });

    it('warns once a minute per other phone number id whose messages it skips', async () => {
      const { logger, warnings } = warningLogger();
      let nowMs = 1_000_000;
      const { fake, webhookUrl } = await start({ logger, now: () => nowMs });
      const forNumber = (phoneNumberId: string) => {
        const notification = fake.notification(fake.textMessage({ text: 'not ours' }));
        notification.entry[0].changes[0].value.metadata.phone_number_id = phoneNumberId;
        return notification;
      };
      const deliver = async (phoneNumberId: string) =>
        (await fake.deliverWebhook(webhookUrl, forNumber(phoneNumberId))).status;
      expect([await deliver('999'), await deliver('999'), await deliver('888')]).toEqual([200, 200, 200]);
      nowMs += 59_999;
      await deliver('999');
      nowMs += 1;
      await deliver('999');
      expect(warnings).toMatchObject([
        { msg: 'messages for another phone number id skipped', phoneNumberId: '999', skipped: 1 },
        { msg: 'messages for another phone number id skipped', phoneNumberId: '888', skipped: 1 },
        { msg: 'messages for another phone number id skipped', phoneNumberId: '999', skipped: 3 },
      ]);
      expect(fake.sent()).toEqual([]);
    });

    it('skips a malformed message and takes the others', async () => {
      const { ingress, accepted } = recordingIngress(async () => QUEUED);
      const { fake, webhookUrl } = await start({ ingress });
      const bad = fake.textMessage({ text: 'bad', extra: { text: { body: 42 } } });
      const answer = await fake.deliverWebhook(
        webhookUrl,
        fake.notification(fake.textMessage({ text: 'first' }), bad, fake.textMessage({ text: 'third' })),
      );
      expect(answer.status).toBe(200);
      expect(accepted.map((message) => message.text)).toEqual(['first', 'third']);
    });
  });

  describe('when the gateway cannot take the message now', () => {
    it('answers 503 with Retry-After, so that Meta delivers it again', async () => {
      const { ingress } = recordingIngress(async () => ({
        status: 'refused',
        reason: 'queue_full',
        retryAfterMs: 2_000,
      }));
      const { fake, webhookUrl } = await start({ ingress });
      const answer = await fake.deliverWebhook(
        webhookUrl,
        fake.notification(fake.textMessage({ text: 'later' })),
      );
      expect(answer.status).toBe(503);
      expect(answer.headers.get('retry-after')).toBe('2');
      expect(answer.body).toMatchObject({ error: { code: 'SB_QUEUE_FULL' } });
    });
  });

  describe('when Meta verifies the callback URL (GET)', () => {
    it('echoes hub.challenge as text when hub.verify_token matches', async () => {
      const { fake, webhookUrl } = await start();
      expect(await fake.verifySubscription(webhookUrl, { challenge: '1158201444' })).toEqual({
        status: 200,
        body: '1158201444',
      });
    });

    it('answers the challenge with nosniff, so that no browser reads it as a page', async () => {
      const { fake, webhookUrl } = await start();
      const query = new URLSearchParams({
        'hub.mode': 'subscribe',
        'hub.verify_token': fake.verifyToken,
        'hub.challenge': '1158201444',
      });
      const answer = await fetch(`${webhookUrl}?${query}`);
      expect(answer.status).toBe(200);
      expect(answer.headers.get('x-content-type-options')).toBe('nosniff');
      expect(answer.headers.get('content-type')).toMatch(/^text\/plain/);
    });

    it('answers 403 saying hub.challenge is repeated when it is given twice', async () => {
      const { fake, webhookUrl } = await start();
      const query = `hub.mode=subscribe&hub.verify_token=${fake.verifyToken}&hub.challenge=1&hub.challenge=2`;
      const answer = await fetch(`${webhookUrl}?${query}`);
      expect(answer.status).toBe(403);
      expect(await answer.text()).toContain('hub.challenge: repeated');
    });

    it.each([
      ['another verify token', { verifyToken: 'guessed' }, 'hub.verify_token'],
      ['another mode', { mode: 'unsubscribe' }, 'hub.mode'],
      ['a challenge that is no number', { challenge: 'javascript:alert(1)' }, 'hub.challenge'],
    ])('answers 403 naming the parameter for %s', async (_case, query, parameter) => {
      const { fake, webhookUrl } = await start();
      const answer = await fake.verifySubscription(webhookUrl, query);
      expect(answer.status).toBe(403);
      expect(JSON.parse(answer.body)).toMatchObject({ error: { code: 'SB_HTTP_FORBIDDEN' } });
      expect(answer.body).toContain(parameter);
      expect(answer.body).not.toContain(fake.verifyToken);
    });
  });

  describe('when the answer carries an image as data and its upload fails', () => {
    const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 1, 2, 3]);
    const answer = (text: string) => [
      {
        text: `chart for ${text}`,
        attachments: [{ type: 'image' as const, data: png.toString('base64'), mime_type: 'image/png' }],
      },
    ];

    it('tries the upload again after a 500, then sends the image and the text once', async () => {
      const { fake, webhookUrl, outcomes } = await start({ answer });
      fake.failNextUploads(1, { kind: 'http_status', status: 500 });
      await fake.deliverWebhook(webhookUrl, fake.notification(fake.textMessage({ text: 'q3' })));

      await eventually(() => outcomes.some((outcome) => outcome.kind === 'completed'), 5_000);
      const uploads = fake.calls.filter((call) => call.path.endsWith('/media'));
      expect(uploads.map((call) => call.status)).toEqual([500, 200]);
      expect(fake.uploads()[0]?.file.bytes.equals(png)).toBe(true);
      expect(fake.sent().map(({ type, text }) => [type, text])).toEqual([
        ['image', ''],
        ['text', 'chart for q3'],
      ]);
    });

    it('dead-letters the delivery as delivery_failed naming the upload when Meta refuses it', async () => {
      const { fake, webhookUrl, outcomes } = await start({ answer });
      fake.failNextUploads(1, {
        kind: 'http_status',
        status: 400,
        code: 131053,
        message: '(#131053) Media upload error',
      });
      await fake.deliverWebhook(webhookUrl, fake.notification(fake.textMessage({ text: 'q3' })));

      const failed = await eventually(
        () => outcomes.find((outcome) => outcome.kind === 'dead_lettered'),
        5_000,
      );
      expect(failed).toMatchObject({ reason: 'delivery_failed', error: { code: 'SB_CHANNEL_SEND_FAILED' } });
      expect(failed.error?.message).toContain('POST /media');
      expect(failed.error?.message).toContain('131053');
      expect(fake.sent()).toEqual([]);
    });
  });
});
