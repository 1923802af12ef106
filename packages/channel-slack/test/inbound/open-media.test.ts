import { type ChannelAdapter, isSwitchboardError, silentLogger } from '@switchboard/core';
import { type FakeSlack, startFakeSlack } from '@switchboard/testkit/slack';
import Fastify from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSlackChannel } from '../../src/channel.js';
import { SlackChannelSchema } from '../../src/options.js';

async function bytesOf(body: AsyncIterable<Buffer>): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of body) chunks.push(chunk);
  return Buffer.concat(chunks);
}

const codeOf = (error: unknown) => (isSwitchboardError(error) ? error.code : String(error));

describe('createSlackChannel openMedia (against the fake Slack)', () => {
  let fake: FakeSlack;
  let slack: ChannelAdapter;

  beforeAll(async () => {
    fake = await startFakeSlack();
    // Not started: files open on any replica.
    slack = createSlackChannel({
      config: SlackChannelSchema.parse({
        id: 'sl',
        type: 'slack',
        bot_token: 'xoxb-test',
        signing_secret: 'a-signing-secret',
        bot_user_id: 'UBOT',
        api_url: fake.apiUrl,
      }),
      server: Fastify(),
      logger: silentLogger,
    });
  });
  afterAll(() => fake.close());

  describe('when the file is on the configured Slack host', () => {
    it('downloads url_private_download with the bot token as bearer and streams its bytes', async () => {
      const content = Buffer.from('%PDF-1.7 not really a pdf');
      const file = fake.addFile(content, { name: 'report.pdf', mimetype: 'application/pdf' });
      const download = await slack.openMedia?.(
        { type: 'file', file_id: file.id, url: file.url_private_download },
        AbortSignal.timeout(5_000),
      );
      expect(download?.size).toBe(content.length);
      expect(await bytesOf(download?.body as AsyncIterable<Buffer>)).toEqual(content);
      expect(fake.fileRequests().at(-1)?.authorization).toBe('Bearer xoxb-test');
    });
  });

  describe('when the element points elsewhere', () => {
    it.each([
      'https://attacker.example/files-pri/T0001-F1/x.png',
      'http://files.slack.com/files-pri/T0001-F1/x.png',
      'https://files.slack.com.attacker.example/x.png',
    ])('refuses %s without a request, so the token goes nowhere', async (url) => {
      const before = fake.fileRequests().length;
      const error = await slack
        .openMedia?.({ type: 'image', url }, AbortSignal.timeout(5_000))
        .catch((err: unknown) => err);
      expect(codeOf(error)).toBe('SB_MEDIA_UNAVAILABLE');
      expect((error as Error).message).not.toContain('xoxb-test');
      expect(fake.fileRequests().length).toBe(before);
    });
  });

  describe('when Slack refuses the file', () => {
    it('rejects with SB_MEDIA_UNAVAILABLE naming the status', async () => {
      const error = await slack
        .openMedia?.(
          { type: 'file', url: `${fake.url}/files-pri/T0001-F9/missing.bin` },
          AbortSignal.timeout(5_000),
        )
        .catch((err: unknown) => err);
      expect(codeOf(error)).toBe('SB_MEDIA_UNAVAILABLE');
      expect((error as { details?: { status?: number } }).details?.status).toBe(404);
    });
  });
});
