import { createHash } from 'node:crypto';
import { type ChannelAdapter, isSwitchboardError, silentLogger } from '@switchboard/core';
import { type FakeTelegram, startFakeTelegram } from '@switchboard/testkit/telegram';
import Fastify from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TelegramChannelSchema } from '../src/options.js';
import { createTelegramChannel } from '../src/index.js';

const NO_PACING = { enabled: false, per_bot: null, per_chat: null, per_group: null };

async function bytesOf(body: AsyncIterable<Buffer>): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of body) chunks.push(chunk);
  return Buffer.concat(chunks);
}

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

describe('createTelegramChannel openMedia (against the fake Bot API)', () => {
  let fake: FakeTelegram;
  let tg: ChannelAdapter;

  beforeAll(async () => {
    fake = await startFakeTelegram();
    // Not started: like `send`, opening a file must work on a replica that does not poll.
    tg = createTelegramChannel({
      config: TelegramChannelSchema.parse({
        id: 'tg',
        type: 'telegram',
        token: fake.token,
        api_root: `${fake.url}/`,
        outbound: { rate: NO_PACING },
      }),
      server: Fastify(),
      logger: silentLogger,
    });
  });
  afterAll(() => fake.close());

  describe('when the file exists', () => {
    it('streams its bytes with the size the file server gave', async () => {
      const content = Buffer.from(Array.from({ length: 300_000 }, (_, i) => i % 251));
      const file = fake.addFile(content, 'photo.jpg');
      const download = await tg.openMedia?.(
        { type: 'image', file_id: file.file_id },
        AbortSignal.timeout(5_000),
      );
      expect(download?.size).toBe(content.length);
      expect(sha256(await bytesOf(download?.body as AsyncIterable<Buffer>))).toBe(sha256(content));
      expect(fake.callsOf('getFile').at(-1)?.body.file_id).toBe(file.file_id);
    });

    it('stops the platform download when the body is destroyed midway', async () => {
      const file = fake.addFile(Buffer.alloc(8_000_000, 7));
      const download = await tg.openMedia?.(
        { type: 'file', file_id: file.file_id },
        AbortSignal.timeout(5_000),
      );
      download?.body.destroy();
      const path = `/file/bot${fake.token}/${file.file_path}`;
      await expect
        .poll(() => fake.fileDownloads().find((entry) => entry.path === path), { timeout: 5_000 })
        .toMatchObject({ state: 'aborted' });
      expect(fake.fileDownloads().find((entry) => entry.path === path)?.bytesSent).toBeLessThan(8_000_000);
    });
  });

  describe('when Telegram refuses the file', () => {
    it('rejects with SB_MEDIA_UNAVAILABLE and never names the token', async () => {
      const error = await tg
        .openMedia?.({ type: 'file', file_id: 'no-such-file' }, AbortSignal.timeout(5_000))
        .catch((err: unknown) => err);
      expect(isSwitchboardError(error, 'SB_MEDIA_UNAVAILABLE')).toBe(true);
      const text = JSON.stringify({
        message: (error as Error).message,
        details: (error as { details?: unknown }).details,
      });
      expect(text).toContain('invalid file_id');
      expect(text).not.toContain(fake.token);
    });

    it('rejects a file past the Bot API download limit as unavailable', async () => {
      const file = fake.addFile(Buffer.alloc(21 * 1024 * 1024));
      const error = await tg
        .openMedia?.({ type: 'video', file_id: file.file_id }, AbortSignal.timeout(5_000))
        .catch((err: unknown) => err);
      expect(isSwitchboardError(error, 'SB_MEDIA_UNAVAILABLE')).toBe(true);
      expect((error as Error).message).toContain('file is too big');
    });
  });
});
