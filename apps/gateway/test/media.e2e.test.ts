import { createHash } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { mediaKeyOf, signMediaToken } from '@switchboard/core';
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
import { type ServeProcess, eventually, get, serveYaml } from './serve-process.js';

// biome-ignore lint/suspicious/noExplicitAny: payloads are read freely
type Json = Record<string, any>;

const alice = { id: 111_222_333, is_bot: false, first_name: 'Alice', username: 'alice' };
const chat = { id: alice.id, first_name: 'Alice', type: 'private' };
const MB = 1_000_000;

const sha256 = (bytes: Buffer | Uint8Array) => createHash('sha256').update(bytes).digest('hex');

/** Bytes that differ from offset to offset, so that a shifted or repeated chunk shows. */
function patterned(length: number): Buffer {
  const bytes = Buffer.alloc(length);
  for (let i = 0; i < length; i += 4) bytes.writeUInt32LE(i, i);
  return bytes;
}

/** The gateway's resident memory in bytes, as Linux counts it. */
function rssOf(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8').match(/^VmRSS:\s+(\d+) kB$/m);
  if (line === null) throw new Error('no VmRSS');
  return Number(line[1]) * 1024;
}

/** A gateway with one Telegram channel (`max_bytes` its media limit) answered by an http backend. */
async function startTelegramGateway(
  maxBytes: string,
  fakeOptions?: Parameters<typeof startFakeTelegram>[0],
): Promise<{ fake: FakeTelegram; backend: FakePipeline; gateway: ServeProcess }> {
  const fake = await startFakeTelegram(fakeOptions);
  const backend = await startFakePipeline();
  const gateway = await serveYaml(`
channels:
  - id: tg
    type: telegram
    token: "${fake.token}"
    api_root: "${fake.url}"
    media: { max_bytes: ${maxBytes} }
pipelines:
  - { id: bot, type: http, url: "${backend.url}" }
routing: { default: bot }
`);
  return { fake, backend, gateway };
}

describe('media in (end to end: fake Telegram, real http backend)', () => {
  let fake: FakeTelegram;
  let backend: FakePipeline;
  let gateway: ServeProcess;

  beforeAll(async () => {
    ({ fake, backend, gateway } = await startTelegramGateway('25MB'));
  });
  afterAll(async () => {
    await gateway?.stop('SIGKILL');
    await backend?.close();
    await fake?.close();
  });

  /** Sends a message with `media` and resolves the element the backend received for it. */
  async function mediaElementOf(media: Json, caption: string): Promise<Json> {
    fake.pushUpdate({ message: fake.message({ from: alice, chat, caption, ...media }) });
    const request = (await eventually(() =>
      backend.requests.find((each) => each.text === caption),
    )) as unknown as { messages: Array<{ elements: Json[] }> };
    const element = request.messages[0]?.elements.find((each) => 'media_url' in each);
    if (element === undefined) throw new Error('no media element with a media_url');
    return element;
  }

  describe('when a photo arrives', () => {
    let file: ReturnType<FakeTelegram['addFile']>;
    let content: Buffer;
    let element: Json;

    beforeAll(async () => {
      content = patterned(700_000);
      file = fake.addFile(content);
      element = await mediaElementOf(
        {
          photo: [
            {
              file_id: file.file_id,
              file_unique_id: file.file_unique_id,
              file_size: content.length,
              width: 800,
              height: 600,
            },
          ],
        },
        'a photo',
      );
    });

    it('gives the backend an image element with an absolute media_url on the gateway', () => {
      expect(element).toMatchObject({
        type: 'image',
        file_id: file.file_id,
        mime_type: 'image/jpeg',
        size: content.length,
      });
      expect(element.media_url).toMatch(
        new RegExp(`^${gateway.url}/v1/media/[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+$`),
      );
    });

    it('serves through media_url exactly the bytes the platform holds', async () => {
      const response = await fetch(element.media_url);
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toBe('image/jpeg');
      expect(response.headers.get('content-length')).toBe(String(content.length));
      expect(sha256(Buffer.from(await response.arrayBuffer()))).toBe(sha256(content));
    });

    it('never shows the backend the bot token, in the body or the headers', () => {
      const seen = JSON.stringify({ requests: backend.requests, headers: backend.headers });
      expect(seen).toContain(file.file_id);
      expect(seen).not.toContain(fake.token);
      expect(seen).not.toContain(fake.token.split(':')[1]);
    });

    it('stores no media URL: the journal and the audit hold none', () => {
      const files = readdirSync(gateway.dir).filter((name) => name.startsWith('data.db'));
      expect(files.length).toBeGreaterThan(0);
      for (const name of files)
        expect(readFileSync(join(gateway.dir, name)).includes('/v1/media/')).toBe(false);
    });
  });

  describe('when a file is larger than media.max_bytes', () => {
    it('marks the element too_large and the media route answers 413 without downloading', async () => {
      const file = fake.addFile(Buffer.alloc(30 * MB, 1), 'big.bin');
      const element = await mediaElementOf(
        {
          document: {
            file_id: file.file_id,
            file_unique_id: file.file_unique_id,
            file_size: 30 * MB,
            file_name: 'big.bin',
          },
        },
        'a big file',
      );
      expect(element).toMatchObject({ type: 'file', name: 'big.bin', size: 30 * MB, too_large: true });
      const getFiles = fake.callsOf('getFile').length;
      const answer = await get(element.media_url);
      expect(answer.status).toBe(413);
      expect(answer.body.error.code).toBe('SB_MEDIA_TOO_LARGE');
      expect(fake.callsOf('getFile').length).toBe(getFiles);
    });
  });

  describe('when a link is forged or expired', () => {
    it('refuses a token signed with another key as invalid (403)', async () => {
      const forged = signMediaToken(mediaKeyOf('a guessed secret', 'tg'), {
        channel: 'tg',
        media: { type: 'file', file_id: 'x' },
        expiresAtMs: Date.now() + 60_000,
      });
      const answer = await get(`${gateway.url}/v1/media/${forged}`);
      expect(answer.status).toBe(403);
      expect(answer.body.error.code).toBe('SB_MEDIA_TOKEN_INVALID');
    });

    it('refuses a cut or garbled token as invalid (403)', async () => {
      const answer = await get(`${gateway.url}/v1/media/not-a-token`);
      expect(answer.status).toBe(403);
      expect(answer.body.error.code).toBe('SB_MEDIA_TOKEN_INVALID');
    });

    it('refuses a genuine token past its expiry with 410 naming the expiry', async () => {
      // Without server.media_secret the channel's key derives from its one secret, its token.
      const expired = signMediaToken(mediaKeyOf(fake.token, 'tg'), {
        channel: 'tg',
        media: { type: 'file', file_id: 'x' },
        expiresAtMs: Date.now() - 1_000,
      });
      const answer = await get(`${gateway.url}/v1/media/${expired}`);
      expect(answer.status).toBe(410);
      expect(answer.body.error.code).toBe('SB_MEDIA_TOKEN_EXPIRED');
    });

    it('answers 404 for a token naming no configured channel', async () => {
      const other = signMediaToken(mediaKeyOf(fake.token, 'gone'), {
        channel: 'gone',
        media: { type: 'file', file_id: 'x' },
        expiresAtMs: Date.now() + 60_000,
      });
      const answer = await get(`${gateway.url}/v1/media/${other}`);
      expect(answer.status).toBe(404);
      expect(answer.body.error.code).toBe('SB_MEDIA_NOT_FOUND');
    });
  });
});

describe('media in (end to end: a large file through a local Bot API server)', () => {
  let fake: FakeTelegram;
  let backend: FakePipeline;
  let gateway: ServeProcess;

  beforeAll(async () => {
    // A local Bot API server serves files past the public API's 20 MB.
    ({ fake, backend, gateway } = await startTelegramGateway('1GB', { downloadLimitBytes: 2_000 * MB }));
  });
  afterAll(async () => {
    await gateway?.stop('SIGKILL');
    await backend?.close();
    await fake?.close();
  });

  /**
   * Sends a video of `size` patterned bytes, downloads it through its media_url checking every
   * byte, and resolves the gateway's RSS just before and at its peak during the download, in MiB.
   */
  async function streamedRss(size: number, caption: string): Promise<{ before: number; peak: number }> {
    const content = patterned(size);
    const file = fake.addFile(content);
    fake.pushUpdate({
      message: fake.message({
        from: alice,
        chat,
        caption,
        video: {
          file_id: file.file_id,
          file_unique_id: file.file_unique_id,
          file_size: size,
          width: 1,
          height: 1,
          duration: 1,
        },
      }),
    });
    const request = (await eventually(() =>
      backend.requests.find((each) => each.text === caption),
    )) as unknown as {
      messages: Array<{ elements: Json[] }>;
    };
    const element = request.messages[0]?.elements.find((each) => 'media_url' in each) as Json;
    const pid = gateway.child.pid as number;
    const before = rssOf(pid);
    let peak = before;
    const response = await fetch(element.media_url);
    const hash = createHash('sha256');
    let received = 0;
    for await (const chunk of response.body as AsyncIterable<Uint8Array>) {
      hash.update(chunk);
      received += chunk.length;
      peak = Math.max(peak, rssOf(pid));
    }
    const mib = { before: before / 2 ** 20, peak: peak / 2 ** 20 };
    console.info(
      `media stream: ${size / MB} MB through the gateway; RSS ${mib.before.toFixed(1)} MiB before, peak ${mib.peak.toFixed(1)} MiB`,
    );
    expect(received).toBe(size);
    expect(hash.digest('hex')).toBe(sha256(content));
    return mib;
  }

  // The chunks a stream passes on are garbage once written, and V8 collects them when about
  // 64 MB of it has piled up (its external-memory threshold), whatever the file's size: a
  // gateway's first large download lifts its RSS to that plateau once, and later downloads
  // reuse the memory. Buffering would instead grow with each file.
  let plateau: number;

  it('streams a 200 MB file in far less memory than the file: the gateway RSS grows under half of it', async () => {
    const size = 200 * MB;
    const rss = await streamedRss(size, 'a long video');
    expect(rss.peak - rss.before).toBeLessThan(size / 2 ** 20 / 2);
    plateau = rss.peak;
  });

  it('keeps the gateway RSS flat while a 20 MB file streams next: no higher than that plateau', async () => {
    const rss = await streamedRss(20 * MB, 'a shorter video');
    expect(rss.peak).toBeLessThan(plateau + 4);
  });
});

describe('media in (end to end: fake Slack, real http backend)', () => {
  const SECRET = 'slack-signing-secret';
  let fake: FakeSlack;
  let backend: FakePipeline;
  let gateway: ServeProcess;

  beforeAll(async () => {
    fake = await startFakeSlack();
    backend = await startFakePipeline();
    gateway = await serveYaml(`
channels:
  - { id: sl, type: slack, bot_token: xoxb-test, signing_secret: ${SECRET}, api_url: "${fake.apiUrl}", bot_user_id: UBOT }
pipelines:
  - { id: bot, type: http, url: "${backend.url}" }
routing: { default: bot }
`);
  });
  afterAll(async () => {
    await gateway?.stop('SIGKILL');
    await backend?.close();
    await fake?.close();
  });

  it('serves a shared file through media_url, the bot token sent to Slack alone', async () => {
    const content = patterned(300_000);
    const file = fake.addFile(content, { name: 'cat.png', mimetype: 'image/png' });
    const event = messageEvent({ channel: 'D0DM', text: 'a cat', subtype: 'file_share', files: [file] });
    expect((await sendEvent(gateway.url, 'sl', eventEnvelope(event), { signingSecret: SECRET })).status).toBe(
      200,
    );
    const request = (await eventually(() =>
      backend.requests.find((each) => each.text === 'a cat'),
    )) as unknown as {
      messages: Array<{ elements: Json[] }>;
    };
    const element = request.messages[0]?.elements.find((each) => 'media_url' in each) as Json;
    expect(element).toMatchObject({
      type: 'image',
      name: 'cat.png',
      mime_type: 'image/png',
      size: content.length,
    });

    const response = await fetch(element.media_url);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-disposition')).toContain('filename="cat.png"');
    expect(sha256(Buffer.from(await response.arrayBuffer()))).toBe(sha256(content));
    expect(fake.fileRequests().at(-1)?.authorization).toBe('Bearer xoxb-test');
    expect(JSON.stringify({ requests: backend.requests, headers: backend.headers })).not.toContain(
      'xoxb-test',
    );
  });
});
