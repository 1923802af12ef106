import { type FakeLine, startFakeLine } from '@switchboard/testkit/line';
import { type FakeTeams, messageActivity, startFakeTeams } from '@switchboard/testkit/teams';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakePipeline, startFakePipeline } from './fake-pipeline.js';
import { type ServeProcess, eventually, get, serveYaml } from './serve-process.js';

const CHART = 'https://cdn.example.com/charts/chart.png';
const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 254, 255, 1, 2]);
const dataImage = { type: 'image', data: png.toString('base64'), name: 'chart.png', mime_type: 'image/png' };

/** What the backend answers: images and a text, or a file no chat here can take from a bot. */
const ANSWERS: Record<string, unknown> = {
  'show me': { replies: [{ text: 'here is your chart', attachments: [{ type: 'image', url: CHART }] }] },
  'inline please': { replies: [{ text: 'drawn just now', attachments: [dataImage] }] },
  'the report': {
    replies: [
      {
        text: 'the report',
        attachments: [{ type: 'file', url: 'https://cdn.example.com/report.pdf', name: 'report.pdf' }],
      },
    ],
  },
};

describe('replies with attachments on LINE and Teams (switchboard serve against fake platforms)', {
  timeout: 90_000,
}, () => {
  let line: FakeLine;
  let teams: FakeTeams;
  let backend: FakePipeline;
  let gateway: ServeProcess;

  beforeAll(async () => {
    [line, teams, backend] = await Promise.all([startFakeLine(), startFakeTeams(), startFakePipeline()]);
    backend.respond = async (request) => ({ status: 200, body: ANSWERS[request.text] ?? { replies: [] } });
    gateway = await serveYaml(
      `channels:
  - { id: ln, type: line, channel_secret: ${line.channelSecret}, channel_access_token: ${line.channelAccessToken}, api_url: "${line.url}" }
  - id: ms
    type: teams
    app_id: "${teams.appId}"
    app_password: ${teams.appPassword}
    openid_metadata_url: "${teams.openIdMetadataUrl}"
    token_url: "${teams.tokenUrl}"
    outbound: { retry: { base_delay: 100ms, max_delay: 1s } }
pipelines: [{ id: bot, type: http, url: "${backend.url}" }]
routing: { default: bot }
`,
    );
  });
  afterAll(async () => {
    await gateway?.stop('SIGKILL');
    await Promise.all([line?.close(), teams?.close(), backend?.close()]);
  });

  /** The first dead letter of `channel` in the audit. */
  function deadLetterOf(channel: string) {
    return eventually(async () => {
      const audit = await get(`${gateway.url}/admin/audit?outcome=dead_lettered&channel=${channel}`);
      return audit.body.items?.[0];
    }, 30_000);
  }

  describe('when an http backend answers an image at an https url and a text to a LINE user', () => {
    it('replies with an image message, the url as original and preview, then the text', async () => {
      const userId = `U${'0e'.repeat(16)}`;
      const event = line.textEvent({ text: 'show me', source: { type: 'user', userId } });
      expect((await line.deliverWebhook(`${gateway.url}/line/ln`, [event])).status).toBe(200);

      await line.waitForDelivered(userId, 1, 30_000);
      expect(line.sent().filter((sent) => sent.to === userId)).toMatchObject([
        { via: 'reply', type: 'image', originalContentUrl: CHART, previewImageUrl: CHART },
        { via: 'reply', type: 'text', text: 'here is your chart' },
      ]);
    });
  });

  describe('when the answer to a LINE user carries an image as data', () => {
    it('sends nothing and dead-letters the delivery naming the attachment and why', async () => {
      const userId = `U${'0d'.repeat(16)}`;
      const event = line.textEvent({ text: 'inline please', source: { type: 'user', userId } });
      expect((await line.deliverWebhook(`${gateway.url}/line/ln`, [event])).status).toBe(200);

      const record = await deadLetterOf('ln');
      expect(record).toMatchObject({ reason: 'delivery_failed' });
      expect(record.error).toBe(
        'SB_CHANNEL_ATTACHMENTS_UNSUPPORTED: line channel "ln" cannot send replies[0].attachments[0] (image): LINE fetches an image from a public HTTPS URL and takes no bytes: give a url, not data',
      );
      expect(line.sent().filter((sent) => sent.to === userId)).toEqual([]);
    });
  });

  describe('when the answer goes to Teams and the connector fails once', () => {
    it('posts the images inline (an https url, then a data URI), then the text, each once', async () => {
      teams.failNext(1, { kind: 'http_status', status: 502 });
      const post = (text: string) =>
        teams.post(
          gateway.url,
          '/teams/ms/messages',
          messageActivity(teams, { conversationType: 'personal', conversationId: 'a:media', text }),
        );
      expect((await post('show me')).status).toBe(200);
      await eventually(() => teams.deliveredTo('a:media').length === 1, 30_000);
      expect((await post('inline please')).status).toBe(200);
      await eventually(() => teams.deliveredTo('a:media').length === 2, 30_000);

      expect(teams.postedTo('a:media')).toEqual([
        {
          conversationId: 'a:media',
          attachments: [{ contentType: 'image/png', contentUrl: CHART, name: 'chart.png' }],
        },
        { conversationId: 'a:media', text: 'here is your chart' },
        {
          conversationId: 'a:media',
          attachments: [
            {
              contentType: 'image/png',
              contentUrl: `data:image/png;base64,${dataImage.data}`,
              name: 'chart.png',
            },
          ],
        },
        { conversationId: 'a:media', text: 'drawn just now' },
      ]);
      // The failed first post, then the four that went through.
      expect(teams.calls.filter((call) => call.conversationId === 'a:media')).toHaveLength(5);
    });
  });

  describe('when the answer to Teams carries a file', () => {
    it('posts nothing and dead-letters the delivery naming the attachment and why', async () => {
      const activity = messageActivity(teams, {
        conversationType: 'personal',
        conversationId: 'a:report',
        text: 'the report',
      });
      expect((await teams.post(gateway.url, '/teams/ms/messages', activity)).status).toBe(200);

      const record = await deadLetterOf('ms');
      expect(record).toMatchObject({ reason: 'delivery_failed' });
      expect(record.error).toBe(
        'SB_CHANNEL_ATTACHMENTS_UNSUPPORTED: teams channel "ms" cannot send replies[0].attachments[0] (file): a Teams bot sends files and audio only through a file consent card (OneDrive), which the gateway does not do (send a link in the text)',
      );
      expect(teams.postedTo('a:report')).toEqual([]);
    });
  });
});
