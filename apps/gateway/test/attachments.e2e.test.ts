import { type FakeDiscord, startFakeDiscord } from '@switchboard/testkit/discord';
import {
  type FakeSlack,
  eventEnvelope,
  messageEvent,
  sendEvent,
  startFakeSlack,
} from '@switchboard/testkit/slack';
import { type FakeTelegram, startFakeTelegram } from '@switchboard/testkit/telegram';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakePipeline, startFakePipeline } from './fake-pipeline.js';
import { type ServeProcess, eventually, post, serveYaml } from './serve-process.js';

const SIGNING_SECRET = 'attachments-secret';
const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 254, 255, 1, 2]);
const image = { type: 'image', data: png.toString('base64'), name: 'chart.png', mime_type: 'image/png' };

/** What the backend answers: an image and a text, or an attachment that is not valid. */
const ANSWERS: Record<string, unknown> = {
  'show me': { replies: [{ text: 'here is your chart', attachments: [image] }] },
  'bad base64': { replies: [{ text: 'x', attachments: [{ type: 'image', data: 'not base64!' }] }] },
  'too large': {
    replies: [
      { attachments: [{ type: 'file', data: 'A'.repeat(Math.ceil((10 * 1024 * 1024 + 1) / 3) * 4) }] },
    ],
  },
  'url and data': {
    replies: [
      { attachments: [{ type: 'image', data: png.toString('base64'), url: 'https://example.com/a.png' }] },
    ],
  },
};

describe('replies with attachments (switchboard serve against fake platforms)', { timeout: 90_000 }, () => {
  let telegram: FakeTelegram;
  let slack: FakeSlack;
  let discord: FakeDiscord;
  let backend: FakePipeline;
  let gateway: ServeProcess;

  beforeAll(async () => {
    [telegram, slack, discord, backend] = await Promise.all([
      startFakeTelegram(),
      startFakeSlack(),
      startFakeDiscord(),
      startFakePipeline(),
    ]);
    backend.respond = async (request) => ({ status: 200, body: ANSWERS[request.text] ?? { replies: [] } });
    gateway = await serveYaml(
      `channels:
  - { id: api, type: openapi }
  - { id: tg, type: telegram, token: "${telegram.token}", api_root: "${telegram.url}" }
  - { id: sl, type: slack, bot_token: xoxb-test, signing_secret: ${SIGNING_SECRET}, api_url: "${slack.apiUrl}", bot_user_id: UBOT }
  - { id: dc, type: discord, token: "${discord.token}", api_url: "${discord.url}" }
pipelines: [{ id: bot, type: http, url: "${backend.url}" }]
routing: { default: bot }
`,
    );
  });
  afterAll(async () => {
    await gateway?.stop('SIGKILL');
    await Promise.all([telegram?.close(), slack?.close(), discord?.close(), backend?.close()]);
  });

  describe('when an http backend answers an image and a text to a Telegram chat', () => {
    it('sends sendPhoto with the bytes, then sendMessage, in that order', async () => {
      const chat = { id: 7001, first_name: 'Ann', type: 'private' };
      telegram.pushUpdate({
        message: telegram.message({
          chat,
          from: { id: 7001, is_bot: false, first_name: 'Ann' },
          text: 'show me',
        }),
      });

      const methods = await eventually(() => {
        const sent = telegram.calls
          // Typing (sendChatAction) may come first: only what lands in the chat counts here.
          .filter(
            (call) =>
              call.body.chat_id === chat.id && call.status === 200 && call.method !== 'sendChatAction',
          )
          .map((call) => call.method);
        return sent.length >= 2 && sent;
      }, 30_000);
      expect(methods).toEqual(['sendPhoto', 'sendMessage']);
      const [photo] = telegram.sentMedia();
      expect(photo?.file?.bytes.equals(png)).toBe(true);
      expect(photo?.file?.filename).toBe('chart.png');
      expect(telegram.deliveredTo(chat.id)).toEqual(['here is your chart']);
    });
  });

  describe('when the answer goes to Slack and the upload URL fails once', () => {
    it('uploads again, shares the file once, then posts the text', async () => {
      slack.failNextUploads(1, 500);
      const answer = await sendEvent(
        gateway.url,
        'sl',
        eventEnvelope(messageEvent({ channel: 'D0FILES', text: 'show me' })),
        { signingSecret: SIGNING_SECRET },
      );
      expect(answer.status).toBe(200);

      await eventually(() => slack.deliveredTo('D0FILES').length === 1, 30_000);
      expect(slack.callsTo('files.getUploadURLExternal')).toHaveLength(2);
      const shared = slack.filesSharedTo('D0FILES');
      expect(shared.map((file) => file.filename)).toEqual(['chart.png']);
      expect(shared[0]?.bytes.equals(png)).toBe(true);
      expect(slack.deliveredTo('D0FILES')).toEqual(['here is your chart']);
    });
  });

  describe('when the answer goes to Discord', () => {
    it('posts the image as a multipart upload, then the text', async () => {
      discord.messageCreate({
        channel_id: '1240000000000000042',
        channel_type: 1,
        author: { id: '234567890123456789', username: 'alice' },
        content: 'show me',
      });

      const sent = await eventually(
        () => discord.sentMessages().length >= 2 && discord.sentMessages(),
        30_000,
      );
      expect(sent.map((message) => message.files.map((file) => file.filename))).toEqual([['chart.png'], []]);
      expect(sent[0]?.files[0]?.bytes.equals(png)).toBe(true);
      expect(sent[1]?.body.content).toBe('here is your chart');
    });
  });

  describe('when an HTTP API caller waits for the answer', () => {
    it('gets the attachments in its reply JSON as the backend gave them', async () => {
      const answer = await post(`${gateway.url}/v1/messages`, {
        session_id: 's1',
        user_id: 'u1',
        text: 'show me',
      });
      expect(answer.status).toBe(200);
      expect(answer.body).toMatchObject({
        status: 'completed',
        replies: [{ text: 'here is your chart', attachments: [image] }],
      });
    });
  });

  describe('when the backend answers an invalid attachment', () => {
    it.each([
      ['bad base64', 'replies[0].attachments[0].data: must be standard base64'],
      ['too large', `replies[0].attachments[0].data: must decode to at most ${10 * 1024 * 1024} bytes`],
      ['url and data', 'replies[0].attachments[0].data: give url or data, not both'],
    ])('dead-letters the message (%s) with an error naming the field', async (text, problem) => {
      const answer = await post(`${gateway.url}/v1/messages`, {
        session_id: `bad-${text}`,
        user_id: 'u1',
        text,
      });
      expect(answer.body).toMatchObject({ status: 'dead_lettered', replies: [] });
      expect(answer.body?.error).toContain('SB_PIPELINE_FAILED');
      expect(answer.body?.error).toContain(problem);
    });
  });
});
