import { createHash } from 'node:crypto';
import { type FakeFeishu, startFakeFeishu } from '@switchboard/testkit/feishu';
import { type FakeTeams, messageActivity, startFakeTeams } from '@switchboard/testkit/teams';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakePipeline, startFakePipeline } from './fake-pipeline.js';
import { type ServeProcess, eventually, serveYaml } from './serve-process.js';

// biome-ignore lint/suspicious/noExplicitAny: payloads are read freely
type Json = Record<string, any>;

const sha256 = (bytes: Buffer | Uint8Array) => createHash('sha256').update(bytes).digest('hex');

/** Bytes that differ from offset to offset, so that a shifted or repeated chunk shows. */
function patterned(length: number, offset: number): Buffer {
  const bytes = Buffer.alloc(length);
  for (let i = 0; i < length; i += 4) bytes.writeUInt32LE((i * 7 + offset) >>> 0, i);
  return bytes;
}

/** The bytes a media link serves. */
async function download(mediaUrl: string): Promise<{ status: number; bytes: Buffer }> {
  const response = await fetch(mediaUrl);
  return { status: response.status, bytes: Buffer.from(await response.arrayBuffer()) };
}

describe('media in (end to end: fake Feishu and Teams, real http backend)', () => {
  let feishu: FakeFeishu;
  let teams: FakeTeams;
  let backend: FakePipeline;
  let gateway: ServeProcess;

  /** Everything the backend was sent, headers included. */
  const seenByBackend = () => JSON.stringify({ requests: backend.requests, headers: backend.headers });

  /** The media elements of the first message of the backend request `matches` picks. */
  async function mediaElementsOf(matches: (elements: Json[]) => boolean): Promise<Json[]> {
    const request = await eventually(() =>
      (backend.requests as unknown as Array<{ messages: Array<{ elements: Json[] }> }>).find((each) =>
        matches(each.messages[0]?.elements ?? []),
      ),
    );
    return (request.messages[0]?.elements ?? []).filter((element) => 'media_url' in element);
  }

  beforeAll(async () => {
    [feishu, teams, backend] = await Promise.all([startFakeFeishu(), startFakeTeams(), startFakePipeline()]);
    gateway = await serveYaml(`
channels:
  - id: fs
    type: feishu
    app_id: ${feishu.appId}
    app_secret: ${feishu.appSecret}
    encrypt_key: ${feishu.encryptKey}
    verification_token: ${feishu.verificationToken}
    domain: "${feishu.url}"
  - id: ms
    type: teams
    app_id: "${teams.appId}"
    app_password: ${teams.appPassword}
    openid_metadata_url: "${teams.openIdMetadataUrl}"
    token_url: "${teams.tokenUrl}"
pipelines:
  - { id: bot, type: http, url: "${backend.url}" }
routing: { default: bot }
`);
  }, 60_000);
  afterAll(async () => {
    await gateway?.stop('SIGKILL');
    await Promise.all([backend?.close(), feishu?.close(), teams?.close()]);
  });

  describe.each([
    { kind: 'an image', messageType: 'image', key: 'image_key', type: 'image', asked: 'image' },
    { kind: 'a file', messageType: 'file', key: 'file_key', type: 'file', asked: 'file' },
  ])('when a Feishu user sends $kind', ({ messageType, key, type, asked }) => {
    const fileKey = `${key}_e2e_${messageType}`;
    const content = patterned(300_000, fileKey.length);
    let messageId: string;
    let element: Json;

    beforeAll(async () => {
      const event = feishu.messageEvent({
        text: '',
        kind: { messageType, content: { [key]: fileKey, file_name: 'report.bin' } },
      });
      messageId = event.event.message.message_id;
      feishu.addResource({
        messageId,
        fileKey,
        type: asked as 'image' | 'file',
        content,
        contentType: 'image/png',
      });
      expect((await feishu.deliverEvent(`${gateway.url}/feishu/fs`, event)).status).toBe(200);
      [element] = (await mediaElementsOf((elements) =>
        elements.some((each) => each.file_id === fileKey),
      )) as [Json];
    });

    it(`gives the backend a ${type} element with an absolute media_url on the gateway`, () => {
      expect(element).toMatchObject({ type, file_id: fileKey });
      expect(element.media_url).toMatch(
        new RegExp(`^${gateway.url}/v1/media/[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+$`),
      );
    });

    it(`serves exactly the message's resource, asked for with type=${asked} and the tenant token`, async () => {
      const { status, bytes } = await download(element.media_url);
      expect(status).toBe(200);
      expect(sha256(bytes)).toBe(sha256(content));
      const call = feishu.callsTo('resource').find((each) => each.resource?.fileKey === fileKey);
      expect(call).toMatchObject({ messageId, resource: { type: asked }, status: 200 });
      expect(feishu.issuedTokens()).toContain(call?.token);
    });

    it('never shows the backend the app secret or a tenant token', () => {
      const seen = seenByBackend();
      expect(seen).toContain(fileKey);
      expect(seen).not.toContain(feishu.appSecret);
      for (const token of feishu.issuedTokens()) expect(seen).not.toContain(token);
    });
  });

  describe('when a Teams user sends an inline image and shares a file', () => {
    const picture = patterned(250_000, 1);
    const document = patterned(400_000, 2);
    let image: Json;
    let file: Json;
    let downloadUrl: string;

    beforeAll(async () => {
      const inline = teams.addAttachment(picture, 'image/png');
      const shared = teams.addSharedFile(document, 'report.pdf');
      downloadUrl = (shared.content as { downloadUrl: string }).downloadUrl;
      const activity = messageActivity(teams, {
        conversationType: 'personal',
        conversationId: 'a:media',
        text: 'two files',
        attachments: [inline, shared],
      });
      expect((await teams.post(gateway.url, '/teams/ms/messages', activity)).status).toBeLessThan(300);
      [image, file] = (await mediaElementsOf((elements) =>
        elements.some((each) => each.type === 'text' && each.text === 'two files'),
      )) as [Json, Json];
      expect(image).toMatchObject({ type: 'image', url: inline.contentUrl });
    });

    it('gives the backend an image and a named file (its download link) with absolute media_urls', () => {
      expect(file).toMatchObject({ type: 'file', name: 'report.pdf', url: downloadUrl });
      for (const each of [image, file])
        expect(each.media_url).toMatch(
          new RegExp(`^${gateway.url}/v1/media/[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+$`),
        );
    });

    it("serves exactly the connector's image, fetched with the bot's token, and the shared file", async () => {
      const served = await download(image.media_url);
      expect(served.status).toBe(200);
      expect(sha256(served.bytes)).toBe(sha256(picture));
      expect(teams.fileRequests().find((each) => each.path.includes('/v3/attachments/'))).toMatchObject({
        status: 200,
        authorization: expect.stringMatching(/^Bearer fake-teams-access-/),
      });
      const shared = await download(file.media_url);
      expect(shared.status).toBe(200);
      expect(sha256(shared.bytes)).toBe(sha256(document));
    });

    it('never shows the backend the app password or an access token', () => {
      const seen = seenByBackend();
      expect(seen).toContain('report.pdf');
      expect(seen).not.toContain(teams.appPassword);
      const tokens = teams.fileRequests().flatMap((each) => each.authorization?.split(' ')[1] ?? []);
      expect(tokens.length).toBeGreaterThan(0);
      for (const token of tokens) expect(seen).not.toContain(token);
    });
  });
});
