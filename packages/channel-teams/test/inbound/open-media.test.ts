import { type ChannelAdapter, type MediaRef, isSwitchboardError, silentLogger } from '@switchboard/core';
import { type FakeTeams, startFakeTeams } from '@switchboard/testkit/teams';
import Fastify from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { activityRefKey } from '../../src/activity-ref.js';
import { createTeamsChannel } from '../../src/channel.js';
import { teamsFileAccess } from '../../src/inbound/open-media.js';
import { TeamsChannelSchema } from '../../src/options.js';

async function bytesOf(body: AsyncIterable<Buffer>): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of body) chunks.push(chunk);
  return Buffer.concat(chunks);
}

const codeOf = (error: unknown) => (isSwitchboardError(error) ? error.code : String(error));

const SERVICE_URL = 'https://smba.trafficmanager.net/emea/';

describe('teamsFileAccess', () => {
  it.each([
    ['https://smba.trafficmanager.net/emea/v3/attachments/0-weu-d3-1/views/original', 'bearer'],
    ['https://smba.trafficmanager.net/amer/v3/attachments/0-eus-d1-1/views/original', 'bearer'],
    ['https://contoso-my.sharepoint.com/personal/megan/_layouts/15/download.aspx?tempauth=x', 'anonymous'],
    ['https://contoso.sharepoint.us/sites/a/_layouts/15/download.aspx', 'anonymous'],
    ['http://smba.trafficmanager.net/emea/v3/attachments/1/views/original', null],
    ['http://contoso.sharepoint.com/a', null],
    ['https://smba.trafficmanager.net.attacker.example/v3/attachments/1', null],
    ['https://sharepoint.com.attacker.example/a', null],
    ['https://attacker.example/v3/attachments/1/views/original', null],
  ])('takes %s as %s on the public cloud', (url, access) => {
    expect(teamsFileAccess(new URL(url), SERVICE_URL)).toBe(access);
  });

  it("sends the token to the activity's own connector, whatever its host, and only there", () => {
    const serviceUrl = 'https://smba.infra.gcc.teams.microsoft.com/gcc/';
    expect(teamsFileAccess(new URL(`${serviceUrl}v3/attachments/1/views/original`), serviceUrl)).toBe(
      'bearer',
    );
    expect(teamsFileAccess(new URL('https://smba.infra.gcc.teams.microsoft.com:8443/x'), serviceUrl)).toBe(
      null,
    );
    expect(teamsFileAccess(new URL(`${serviceUrl}v3/attachments/1/views/original`), undefined)).toBe(null);
  });
});

describe('createTeamsChannel openMedia (against the fake Teams)', () => {
  let fake: FakeTeams;
  let teams: ChannelAdapter;
  /** The `message_id` of a link to a file of an activity the fake's connector sent. */
  let messageId: string;

  const open = (media: MediaRef) =>
    (teams.openMedia as NonNullable<ChannelAdapter['openMedia']>)(media, AbortSignal.timeout(5_000));

  beforeAll(async () => {
    fake = await startFakeTeams();
    // Not started: files open on any replica.
    teams = createTeamsChannel({
      config: TeamsChannelSchema.parse({
        id: 'ms',
        type: 'teams',
        app_id: fake.appId,
        app_password: fake.appPassword,
        openid_metadata_url: fake.openIdMetadataUrl,
        token_url: fake.tokenUrl,
      }),
      server: Fastify(),
      logger: silentLogger,
    });
    messageId = activityRefKey({ serviceUrl: fake.serviceUrl, conversationId: 'a:1', activityId: '17' });
  });
  afterAll(() => fake.close());

  describe('when an inline image is on the connector the activity came from', () => {
    it("downloads it with the bot's token as bearer and streams its bytes", async () => {
      const content = Buffer.from('\x89PNG an inline picture');
      const { contentUrl } = fake.addAttachment(content, 'image/png');
      const download = await open({ type: 'image', url: contentUrl, message_id: messageId });
      expect(download).toMatchObject({ size: content.length, mimeType: 'image/png' });
      expect(await bytesOf(download.body as AsyncIterable<Buffer>)).toEqual(content);
      expect(fake.fileRequests().at(-1)).toMatchObject({
        status: 200,
        authorization: expect.stringMatching(/^Bearer fake-teams-access-/),
      });
    });
  });

  describe('when a shared file has its download link', () => {
    it('streams the bytes the link serves', async () => {
      const content = Buffer.from('%PDF-1.7 shared in a chat');
      const shared = fake.addSharedFile(content, 'report.pdf');
      const { downloadUrl } = shared.content as { downloadUrl: string };
      const download = await open({
        type: 'file',
        url: downloadUrl,
        name: 'report.pdf',
        message_id: messageId,
      });
      expect(await bytesOf(download.body as AsyncIterable<Buffer>)).toEqual(content);
    });
  });

  describe('when the file is not on a host the channel may fetch', () => {
    it.each([
      ['another host', 'https://attacker.example/v3/attachments/1/views/original', 'attacker.example'],
      [
        'a connector-like path elsewhere',
        'http://127.0.0.2:9/smba/v3/attachments/1/views/original',
        '127.0.0.2:9',
      ],
    ])('refuses %s naming the host, without a request', async (_, url, host) => {
      const before = fake.fileRequests().length;
      const error = await open({ type: 'image', url, message_id: messageId }).catch((err: unknown) => err);
      expect(codeOf(error)).toBe('SB_MEDIA_UNAVAILABLE');
      expect((error as Error).message).toContain(`(${host})`);
      expect(fake.fileRequests()).toHaveLength(before);
    });

    it("refuses the fake's connector when the link names no activity to vouch for it", async () => {
      const { contentUrl } = fake.addAttachment(Buffer.from('x'), 'image/png');
      const before = fake.fileRequests().length;
      const error = await open({ type: 'image', url: contentUrl }).catch((err: unknown) => err);
      expect(codeOf(error)).toBe('SB_MEDIA_UNAVAILABLE');
      expect((error as Error).message).toContain(new URL(fake.url).host);
      expect(fake.fileRequests()).toHaveLength(before);
    });
  });

  describe('when the connector refuses the cached token', () => {
    it('fails that download, and the next one fetches a new token', async () => {
      const content = Buffer.from('a picture after a revocation');
      const { contentUrl } = fake.addAttachment(content, 'image/jpeg');
      const media = { type: 'image' as const, url: contentUrl, message_id: messageId };
      await bytesOf((await open(media)).body as AsyncIterable<Buffer>);
      fake.revokeTokens();
      const error = await open(media).catch((err: unknown) => err);
      expect((error as { details?: { status?: number } }).details?.status).toBe(401);
      const issued = fake.tokensIssued();
      expect(await bytesOf((await open(media)).body as AsyncIterable<Buffer>)).toEqual(content);
      expect(fake.tokensIssued()).toBe(issued + 1);
    });
  });

  describe('when the connector has no such attachment', () => {
    it('rejects with SB_MEDIA_UNAVAILABLE naming the status', async () => {
      const error = await open({
        type: 'image',
        url: `${fake.serviceUrl}v3/attachments/0-eus-d1-missing/views/original`,
        message_id: messageId,
      }).catch((err: unknown) => err);
      expect(codeOf(error)).toBe('SB_MEDIA_UNAVAILABLE');
      expect((error as { details?: { status?: number } }).details?.status).toBe(404);
    });
  });
});
