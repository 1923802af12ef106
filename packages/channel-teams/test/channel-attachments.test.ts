import { type Reply, silentLogger } from '@switchboard/core';
import { type ChannelEngine, startChannelEngine } from '@switchboard/testkit/channel-engine';
import { eventually } from '@switchboard/testkit/eventually';
import { type FakeTeams, messageActivity, startFakeTeams } from '@switchboard/testkit/teams';
import { afterEach, describe, expect, it } from 'vitest';
import { MAX_INLINE_IMAGE_BYTES, createTeamsChannel } from '../src/index.js';
import { TeamsChannelSchema } from '../src/options.js';

const PATH = '/teams/ms/messages';
const CHART = 'https://cdn.example.com/charts/chart.png';
const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 1, 2, 254, 255]);

/** What the pipeline answers each text with. */
const ANSWERS: Record<string, Reply[]> = {
  chart: [
    {
      text: 'here are your charts',
      attachments: [
        { type: 'image', url: CHART },
        { type: 'image', data: png.toString('base64'), name: 'small.png', mime_type: 'image/png' },
      ],
    },
  ],
  refused: [
    {
      text: 'these cannot go',
      attachments: [
        { type: 'image', url: CHART },
        { type: 'file', url: 'https://cdn.example.com/report.pdf' },
        { type: 'audio', data: 'AAAA', mime_type: 'audio/mpeg' },
        { type: 'image', url: 'http://cdn.example.com/plain.png' },
        { type: 'image', url: 'https://cdn.example.com/photo.webp' },
        {
          type: 'image',
          data: Buffer.alloc(MAX_INLINE_IMAGE_BYTES + 1).toString('base64'),
          mime_type: 'image/jpeg',
        },
      ],
    },
  ],
};

let world: { fake: FakeTeams; engine: ChannelEngine } | undefined;
afterEach(async () => {
  await world?.engine.stop();
  await world?.fake.close();
  world = undefined;
});

/** The Teams channel before the core engine, its connector on the fake. */
async function start() {
  const fake = await startFakeTeams();
  const config = TeamsChannelSchema.parse({
    id: 'ms',
    type: 'teams',
    app_id: fake.appId,
    app_password: fake.appPassword,
    openid_metadata_url: fake.openIdMetadataUrl,
    token_url: fake.tokenUrl,
  });
  const engine = await startChannelEngine({
    channel: (server) => createTeamsChannel({ config, server, logger: silentLogger }),
    policy: config.policy,
    outbound: config.outbound,
    answer: (text) => ANSWERS[text] ?? [`echo: ${text}`],
  });
  world = { fake, engine };
  return world;
}

async function write(fake: FakeTeams, engine: ChannelEngine, text: string) {
  const activity = messageActivity(fake, { conversationType: 'personal', conversationId: 'a:dm', text });
  expect((await fake.post(engine.url, PATH, activity)).status).toBe(200);
}

describe('createTeamsChannel sending attachments', () => {
  describe('when a reply carries images, at an https url and as data, and a text', () => {
    it('posts each image as an activity attachment (inline), then the text, in order', async () => {
      const { fake, engine } = await start();
      await write(fake, engine, 'chart');

      const posted = await eventually(() => fake.postedTo('a:dm').length === 3 && fake.postedTo('a:dm'));
      expect(posted).toEqual([
        {
          conversationId: 'a:dm',
          attachments: [{ contentType: 'image/png', contentUrl: CHART, name: 'chart.png' }],
        },
        {
          conversationId: 'a:dm',
          attachments: [
            {
              contentType: 'image/png',
              contentUrl: `data:image/png;base64,${png.toString('base64')}`,
              name: 'small.png',
            },
          ],
        },
        { conversationId: 'a:dm', text: 'here are your charts' },
      ]);
      // Each is a reply to the user's activity, which keeps a channel's reply chain.
      expect(fake.calls.every((call) => call.body.replyToId === call.activityId)).toBe(true);
    });
  });

  describe('when the connector answers 500 once', () => {
    it('is tried again, and every activity is posted once', async () => {
      const { fake, engine } = await start();
      fake.failNext(1, { kind: 'http_status', status: 500 }, { after: 1 });
      await write(fake, engine, 'chart');

      await eventually(() => engine.outcomes.some((outcome) => outcome.kind === 'completed'));
      expect(fake.calls.map((call) => (call.body.text === undefined ? 'image' : 'text'))).toEqual([
        'image',
        'image',
        'image',
        'text',
      ]);
      expect(
        fake.postedTo('a:dm').map((activity) => activity.attachments?.[0]?.contentUrl ?? activity.text),
      ).toEqual([CHART, `data:image/png;base64,${png.toString('base64')}`, 'here are your charts']);
    });
  });

  describe('when a reply carries attachments Teams cannot show', () => {
    it('posts nothing and dead-letters the delivery, naming each refused attachment and why', async () => {
      const { fake, engine } = await start();
      await write(fake, engine, 'refused');

      const dead = await eventually(() =>
        engine.outcomes.find((outcome) => outcome.kind === 'dead_lettered'),
      );
      expect(dead.reason).toBe('delivery_failed');
      expect(dead.error?.code).toBe('SB_CHANNEL_ATTACHMENTS_UNSUPPORTED');
      const message = dead.error?.message ?? '';
      expect(message.split('; ')).toEqual([
        'teams channel "ms" cannot send replies[0].attachments[1] (file): a Teams bot sends files and audio only through a file consent card (OneDrive), which the gateway does not do (send a link in the text)',
        'replies[0].attachments[2] (audio): a Teams bot sends files and audio only through a file consent card (OneDrive), which the gateway does not do (send a link in the text)',
        'replies[0].attachments[3] (image): the Teams client fetches an image from an HTTPS URL only: the url is not https',
        'replies[0].attachments[4] (image): Teams renders image/png, image/jpeg and image/gif inline: give mime_type (or a name or url ending .png, .jpg or .gif)',
        `replies[0].attachments[5] (image): a data image goes inline in the activity, at most ${MAX_INLINE_IMAGE_BYTES} bytes (this one is ${MAX_INLINE_IMAGE_BYTES + 1}): give a url`,
      ]);
      expect(fake.calls).toEqual([]);
    });
  });
});
