import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type FakeFeishu, startFakeFeishu } from '@switchboard/testkit/feishu';
import { type FakeWhatsApp, startFakeWhatsApp } from '@switchboard/testkit/whatsapp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakePipeline, startFakePipeline } from './fake-pipeline.js';
import { type ServeProcess, eventually, get, serveYaml } from './serve-process.js';

const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 254, 255, 1, 2]);
const pdf = Buffer.from('%PDF-1.4 served to the gateway');
const image = { type: 'image', data: png.toString('base64'), name: 'chart.png', mime_type: 'image/png' };

describe('replies with attachments to WhatsApp and Feishu (switchboard serve against fake platforms)', {
  timeout: 90_000,
}, () => {
  let whatsapp: FakeWhatsApp;
  let feishu: FakeFeishu;
  let backend: FakePipeline;
  let files: Server;
  let filesUrl: string;
  let gateway: ServeProcess;

  beforeAll(async () => {
    files = createServer((_request, response) =>
      response.writeHead(200, { 'content-type': 'application/pdf' }).end(pdf),
    );
    await new Promise<void>((resolve) => files.listen(0, '127.0.0.1', resolve));
    filesUrl = `http://127.0.0.1:${(files.address() as AddressInfo).port}`;
    [whatsapp, feishu, backend] = await Promise.all([
      startFakeWhatsApp(),
      startFakeFeishu(),
      startFakePipeline(),
    ]);
    /** What the backend answers: an image and a text, or a report by url. */
    const answers: Record<string, unknown> = {
      'show me': { replies: [{ text: 'here is your chart', attachments: [image] }] },
      report: {
        replies: [{ text: 'the report', attachments: [{ type: 'file', url: `${filesUrl}/q3/report.pdf` }] }],
      },
    };
    backend.respond = async (request) => ({ status: 200, body: answers[request.text] ?? { replies: [] } });
    // The loopback file server stands for a public host: Feishu's channel may fetch from it,
    // the second Feishu channel keeps the default and must refuse it.
    gateway = await serveYaml(`
channels:
  - { id: wa, type: whatsapp, phone_number_id: "${whatsapp.phoneNumberId}", access_token: ${whatsapp.accessToken}, app_secret: ${whatsapp.appSecret}, verify_token: ${whatsapp.verifyToken}, api_url: "${whatsapp.url}" }
  - { id: fs, type: feishu, app_id: ${feishu.appId}, app_secret: ${feishu.appSecret}, encrypt_key: ${feishu.encryptKey}, verification_token: ${feishu.verificationToken}, domain: "${feishu.url}", outbound: { allow_private_urls: true } }
  - { id: fp, type: feishu, app_id: ${feishu.appId}, app_secret: ${feishu.appSecret}, encrypt_key: ${feishu.encryptKey}, verification_token: ${feishu.verificationToken}, domain: "${feishu.url}" }
pipelines: [{ id: bot, type: http, url: "${backend.url}" }]
routing: { default: bot }
`);
  });
  afterAll(async () => {
    await gateway?.stop('SIGKILL');
    files?.closeAllConnections();
    files?.close();
    await Promise.all([whatsapp?.close(), feishu?.close(), backend?.close()]);
  });

  describe('when the backend answers an image and a text to a WhatsApp user and the upload fails once', () => {
    it('uploads again, then sends the image by its media id and the text, in that order', async () => {
      const from = '4915112345678';
      whatsapp.failNextUploads(1, { kind: 'http_status', status: 500 });
      const notification = whatsapp.notification(whatsapp.textMessage({ text: 'show me', from }));
      expect((await whatsapp.deliverWebhook(`${gateway.url}/whatsapp/wa`, notification)).status).toBe(200);

      await whatsapp.waitForDelivered(from, 1, 30_000);
      const uploads = whatsapp.calls.filter((call) => call.path.endsWith('/media'));
      expect(uploads.map((call) => call.status)).toEqual([500, 200]);
      const [upload] = whatsapp.uploads();
      expect(upload?.file.bytes.equals(png)).toBe(true);
      expect(upload?.file.filename).toBe('chart.png');
      expect(whatsapp.sent().map(({ to, type, text, media }) => ({ to, type, text, media }))).toEqual([
        { to: from, type: 'image', text: '', media: { id: upload?.id } },
        { to: from, type: 'text', text: 'here is your chart', media: undefined },
      ]);
    });
  });

  describe('when the backend answers a report by url to a WhatsApp user', () => {
    it('sends it as a document by link, which Meta fetches, then the text', async () => {
      const from = '4915187654321';
      const notification = whatsapp.notification(whatsapp.textMessage({ text: 'report', from }));
      expect((await whatsapp.deliverWebhook(`${gateway.url}/whatsapp/wa`, notification)).status).toBe(200);

      await whatsapp.waitForDelivered(from, 1, 30_000);
      const sent = whatsapp.sent().filter((message) => message.to === from);
      expect(sent.map(({ type, media }) => ({ type, media }))).toEqual([
        { type: 'document', media: { link: `${filesUrl}/q3/report.pdf`, filename: 'report.pdf' } },
        { type: 'text', media: undefined },
      ]);
    });
  });

  describe('when the backend answers an image and a text to a Feishu chat', () => {
    it('uploads the image, then replies with it, then with the text, in that order', async () => {
      const event = feishu.messageEvent({ text: 'show me', senderOpenId: 'ou_media1' });
      expect((await feishu.deliverEvent(`${gateway.url}/feishu/fs`, event)).status).toBe(200);

      const chatId = event.event.message.chat_id;
      await feishu.waitForShown(chatId, 1, 30_000);
      const [upload] = feishu.uploads();
      expect(upload?.kind).toBe('image');
      expect(upload?.file.bytes.equals(png)).toBe(true);
      const messages = feishu.botMessages().filter((message) => message.chatId === chatId);
      expect(messages.map(({ msgType, key, texts }) => ({ msgType, key, texts }))).toEqual([
        { msgType: 'image', key: upload?.key, texts: [] },
        { msgType: 'text', key: undefined, texts: ['here is your chart'] },
      ]);
    });
  });

  describe('when the backend answers a report by url to a Feishu chat', () => {
    it('fetches the report and uploads it as a pdf file, where private urls are allowed', async () => {
      const event = feishu.messageEvent({ text: 'report', senderOpenId: 'ou_media2' });
      expect((await feishu.deliverEvent(`${gateway.url}/feishu/fs`, event)).status).toBe(200);

      const chatId = event.event.message.chat_id;
      await feishu.waitForShown(chatId, 1, 30_000);
      const report = feishu.uploads().find((upload) => upload.fileName === 'report.pdf');
      expect(report).toMatchObject({ kind: 'file', fileType: 'pdf' });
      expect(report?.file.bytes.equals(pdf)).toBe(true);
      const messages = feishu.botMessages().filter((message) => message.chatId === chatId);
      expect(messages.map(({ msgType, key }) => [msgType, key])).toEqual([
        ['file', report?.key],
        ['text', undefined],
      ]);
    });

    it('refuses the loopback url by default and dead-letters the delivery naming why', async () => {
      const uploaded = feishu.uploads().length;
      const event = feishu.messageEvent({ text: 'report', senderOpenId: 'ou_media3' });
      expect((await feishu.deliverEvent(`${gateway.url}/feishu/fp`, event)).status).toBe(200);

      const record = await eventually(async () => {
        const audit = await get(`${gateway.url}/admin/audit?outcome=dead_lettered&channel=fp`);
        return audit.body.items?.[0];
      }, 30_000);
      expect(record).toMatchObject({ reason: 'delivery_failed' });
      expect(record.error).toContain('SB_CHANNEL_ATTACHMENT_FETCH_FAILED');
      expect(record.error).toContain('the host is not a public address');
      expect(feishu.uploads()).toHaveLength(uploaded);
      expect(feishu.shownIn(event.event.message.chat_id)).toEqual([]);
    });
  });
});
