import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Attachment, Reply } from '@switchboard/core';
import { eventually } from '@switchboard/testkit/eventually';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type FeishuGateway, type FeishuGatewayOptions, startFeishuGateway } from './harness.js';

const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 1, 2, 253, 254, 255]);
const pdf = Buffer.from('%PDF-1.4 fetched by the gateway');
const image: Attachment = {
  type: 'image',
  data: png.toString('base64'),
  name: 'chart.png',
  mime_type: 'image/png',
};

let gateway: FeishuGateway | undefined;
let files: Server;
let filesUrl: string;
beforeEach(async () => {
  files = createServer((_request, response) =>
    response.writeHead(200, { 'content-type': 'application/pdf' }).end(pdf),
  );
  await new Promise<void>((resolve) => files.listen(0, '127.0.0.1', resolve));
  filesUrl = `http://127.0.0.1:${(files.address() as AddressInfo).port}`;
});
afterEach(async () => {
  await gateway?.stop();
  gateway = undefined;
  files.closeAllConnections();
  files.close();
});

/** A gateway whose pipeline answers `replies` to every message, pacing off. */
async function start(replies: Reply[], config: FeishuGatewayOptions['config'] = {}): Promise<FeishuGateway> {
  gateway = await startFeishuGateway({
    answer: () => replies,
    config: { outbound: { rate: { enabled: false } }, ...config },
  });
  return gateway;
}

/** Delivers a user's message; resolves with its chat. */
async function writeToBot({ fake, webhookUrl }: FeishuGateway): Promise<string> {
  const event = fake.messageEvent({ text: 'show me' });
  expect((await fake.deliverEvent(webhookUrl, event)).status).toBe(200);
  return event.event.message.chat_id;
}

describe('feishu channel sending attachments', () => {
  describe('when a reply carries an image as data and a text', () => {
    it('uploads the image, then replies with it, then with the text, in that order', async () => {
      const started = await start([{ text: 'here is your chart', attachments: [image] }]);
      const { fake } = started;
      const chatId = await writeToBot(started);

      await fake.waitForShown(chatId, 1);
      expect(
        fake.calls
          .map((call) => call.endpoint)
          .filter((endpoint) => endpoint !== 'token' && endpoint !== 'bot_info'),
      ).toEqual(['image_upload', 'reply', 'reply']);
      const [upload] = fake.uploads();
      expect(upload).toMatchObject({
        kind: 'image',
        file: { filename: 'chart.png', contentType: 'image/png' },
      });
      expect(upload?.file.bytes.equals(png)).toBe(true);
      const [uploadCall] = fake.callsTo('image_upload');
      expect(uploadCall?.body).toEqual({ image_type: 'message' });
      expect(fake.issuedTokens()).toContain(uploadCall?.token);
      expect(fake.botMessages().map(({ msgType, key, texts }) => ({ msgType, key, texts }))).toEqual([
        { msgType: 'image', key: upload?.key, texts: [] },
        { msgType: 'text', key: undefined, texts: ['here is your chart'] },
      ]);
    });
  });

  describe('when a reply carries a file by url and an opus voice note', () => {
    const voice = Buffer.from('OggS voice');
    /** The report is served by the loopback file server. */
    const withFilesUrl = (): Reply[] => [
      {
        attachments: [
          { type: 'file', url: `${filesUrl}/q3/report.pdf?sig=abc` },
          {
            type: 'audio',
            data: voice.toString('base64'),
            name: 'note.ogg',
            mime_type: 'audio/ogg; codecs=opus',
          },
        ],
      },
    ];

    it('fetches the url and uploads it as a pdf file, the voice note as opus audio', async () => {
      const started = await start(withFilesUrl(), {
        outbound: { rate: { enabled: false }, allow_private_urls: true },
      });
      const { fake } = started;
      await writeToBot(started);

      await eventually(() => fake.botMessages().length === 2, 5_000);
      const [report, note] = fake.uploads();
      expect(report).toMatchObject({ kind: 'file', fileType: 'pdf', fileName: 'report.pdf' });
      expect(report?.file.bytes.equals(pdf)).toBe(true);
      expect(note).toMatchObject({ kind: 'file', fileType: 'opus', fileName: 'note.ogg' });
      expect(note?.file.bytes.equals(voice)).toBe(true);
      expect(fake.botMessages().map(({ msgType, key }) => [msgType, key])).toEqual([
        ['file', report?.key],
        ['audio', note?.key],
      ]);
    });

    it('refuses the url on loopback by default: a delivery_failed dead letter, nothing uploaded', async () => {
      const started = await start(withFilesUrl());
      const { fake, outcomes } = started;
      await writeToBot(started);

      const failed = await eventually(
        () => outcomes.find((outcome) => outcome.kind === 'dead_lettered'),
        5_000,
      );
      expect(failed).toMatchObject({
        reason: 'delivery_failed',
        error: { code: 'SB_CHANNEL_ATTACHMENT_FETCH_FAILED' },
      });
      expect(failed.error?.message).toContain('the host is not a public address');
      expect(fake.uploads()).toEqual([]);
      expect(fake.botMessages()).toEqual([]);
    });
  });

  describe('when the upload fails', () => {
    it('tries again after a 500, then shows the image and the text once', async () => {
      const started = await start([{ text: 'here is your chart', attachments: [image] }]);
      const { fake, outcomes } = started;
      fake.failNext('image_upload', 1, { kind: 'http_status', status: 500 });
      const chatId = await writeToBot(started);

      await eventually(() => outcomes.some((outcome) => outcome.kind === 'completed'), 5_000);
      expect(fake.callsTo('image_upload').map((call) => call.status)).toEqual([500, 200]);
      expect(fake.botMessages().map(({ msgType }) => msgType)).toEqual(['image', 'text']);
      expect(fake.shownIn(chatId)).toEqual(['here is your chart']);
    });

    it('dead-letters the delivery as delivery_failed naming the upload when Feishu refuses it', async () => {
      const started = await start([{ text: 'here is your chart', attachments: [image] }]);
      const { fake, outcomes } = started;
      fake.failNext('image_upload', 1, { kind: 'code', code: 234010 });
      await writeToBot(started);

      const failed = await eventually(
        () => outcomes.find((outcome) => outcome.kind === 'dead_lettered'),
        5_000,
      );
      expect(failed).toMatchObject({ reason: 'delivery_failed', error: { code: 'SB_CHANNEL_SEND_FAILED' } });
      expect(failed.error?.message).toContain('im.image.create');
      expect(fake.botMessages()).toEqual([]);
    });
  });
});
