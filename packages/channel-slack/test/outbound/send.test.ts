import {
  type ChannelAdapter,
  type Logger,
  type SwitchboardError,
  isSwitchboardError,
  silentLogger,
} from '@switchboard/core';
import { eventually } from '@switchboard/testkit/eventually';
import { inboundMessage } from '@switchboard/testkit/inbound-message';
import { type FakeSlack, startFakeSlack } from '@switchboard/testkit/slack';
import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import Fastify from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SlackChannelSchema } from '../../src/options.js';
import { type SlackChannelOptions, createSlackChannel } from '../../src/index.js';

const origin = inboundMessage({
  platform: 'slack',
  channel: 'sl',
  chat: { type: 'person', id: 'D0SEND' },
  platform_message_id: 'D0SEND:1718000000.000100',
});

// The whole send path (Bolt's WebClient, fetch, the retry loop) against the fake Web API.
describe('slack channel send (against the fake Web API)', () => {
  let fake: FakeSlack;
  beforeEach(async () => {
    fake = await startFakeSlack();
  });
  afterEach(() => fake.close());

  // The fake file server is on loopback: url attachments reach it only with this allowance.
  function channel(
    options: Partial<SlackChannelOptions> = {},
    outbound: { allow_private_urls: boolean } = { allow_private_urls: true },
  ): ChannelAdapter {
    const config = SlackChannelSchema.parse({
      id: 'sl',
      type: 'slack',
      bot_token: 'xoxb-test',
      signing_secret: 'secret',
      bot_user_id: 'UBOT',
      api_url: fake.apiUrl,
      outbound,
    });
    return createSlackChannel({ config, server: Fastify(), logger: silentLogger, ...options });
  }

  describe('when chat.postMessage hangs and the send deadline passes', () => {
    it('aborts the request and rejects with the deadline reason', async () => {
      fake.failNext(1, { kind: 'hang' });
      const deadline = new AbortController();
      const sent = channel()
        .send(origin, [{ text: 'hi' }], deadline.signal)
        .catch((error: unknown) => error);
      await fake.waitForCalls('chat.postMessage', 1);

      const reason = new Error('send deadline passed');
      deadline.abort(reason);
      expect(await sent).toBe(reason);
      // Not retried after the deadline: the client's own retries are off.
      expect(fake.callsTo('chat.postMessage')).toHaveLength(1);
    });
  });

  describe('when the deadline passes while a 5xx retry is waiting', () => {
    it('stops waiting and rejects with the deadline reason', async () => {
      fake.failNext(1, { kind: 'http_status', status: 503 });
      const warnings: string[] = [];
      const logger: Logger = {
        ...silentLogger,
        warn: (_bindings: object, message: string) => {
          warnings.push(message);
        },
        child: () => logger,
      };
      const deadline = new AbortController();
      const sent = channel({ logger, transientRetry: { baseDelayMs: 600_000, maxDelayMs: 600_000 } })
        .send(origin, [{ text: 'hi' }], deadline.signal)
        .catch((error: unknown) => error);
      // Logged just before the wait starts.
      await eventually(() => warnings.includes('send failed, retrying'));

      const reason = new Error('send deadline passed');
      deadline.abort(reason);
      expect(await sent).toBe(reason);
      expect(fake.callsTo('chat.postMessage')).toHaveLength(1);
    });
  });

  describe('when Slack answers 5xx once', () => {
    it('retries and posts the reply', async () => {
      fake.failNext(1, { kind: 'http_status', status: 500 });
      await channel({ transientRetry: { baseDelayMs: 10, maxDelayMs: 10 } }).send(
        origin,
        [{ text: 'after a hiccup' }],
        new AbortController().signal,
      );
      const posts = fake.callsTo('chat.postMessage');
      expect(posts).toHaveLength(2);
      expect(posts[1]?.body).toMatchObject({ channel: 'D0SEND', text: 'after a hiccup' });
    });
  });

  describe('when a reply carries files', () => {
    const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 1, 2, 253, 254, 255]);
    const pdf = Buffer.from('%PDF-1.4 fetched by the gateway');
    let files: Server;
    let filesUrl: string;
    beforeEach(async () => {
      files = createServer((_request, response) => response.end(pdf));
      await new Promise<void>((resolve) => files.listen(0, '127.0.0.1', resolve));
      filesUrl = `http://127.0.0.1:${(files.address() as AddressInfo).port}`;
    });
    afterEach(() => {
      files.closeAllConnections();
      files.close();
    });

    it('uploads each (data decoded, a url fetched) into the origin thread, then posts the text', async () => {
      const threaded = {
        ...origin,
        chat: { type: 'group' as const, id: 'C0SEND', thread: '1718000000.000100' },
      };
      await channel().send(
        threaded,
        [
          {
            text: 'two files',
            attachments: [
              { type: 'image', data: png.toString('base64'), name: 'chart.png' },
              { type: 'file', url: `${filesUrl}/report.pdf` },
            ],
          },
        ],
        new AbortController().signal,
      );

      const shared = fake.filesSharedTo('C0SEND');
      expect(shared.map((file) => file.filename)).toEqual(['chart.png', 'report.pdf']);
      expect(shared[0]?.bytes.equals(png)).toBe(true);
      expect(shared[1]?.bytes.equals(pdf)).toBe(true);
      expect(shared.every((file) => file.thread_ts === '1718000000.000100')).toBe(true);
      const order = fake.calls
        .map((call) => call.method)
        .filter((method) => method === 'files.completeUploadExternal' || method === 'chat.postMessage');
      expect(order).toEqual([
        'files.completeUploadExternal',
        'files.completeUploadExternal',
        'chat.postMessage',
      ]);
      expect(fake.deliveredTo('C0SEND')).toEqual(['two files']);
    });

    it('refuses a url on loopback by default, for good, uploading nothing', async () => {
      const error = await channel({}, { allow_private_urls: false })
        .send(
          origin,
          [{ attachments: [{ type: 'file', url: `${filesUrl}/report.pdf` }] }],
          new AbortController().signal,
        )
        .catch((caught: unknown) => caught);
      expect(isSwitchboardError(error, 'SB_CHANNEL_ATTACHMENT_FETCH_FAILED')).toBe(true);
      expect((error as SwitchboardError).retryable).toBe(false);
      expect(fake.callsTo('files.getUploadURLExternal')).toHaveLength(0);
    });

    it('starts the upload again when the upload URL answers 500 once, and shares the file once', async () => {
      fake.failNextUploads(1, 500);
      await channel({ transientRetry: { baseDelayMs: 10, maxDelayMs: 10 } }).send(
        origin,
        [{ attachments: [{ type: 'image', data: png.toString('base64') }] }],
        new AbortController().signal,
      );
      expect(fake.callsTo('files.getUploadURLExternal')).toHaveLength(2);
      const shared = fake.filesSharedTo('D0SEND');
      expect(shared).toHaveLength(1);
      expect(shared[0]?.bytes.equals(png)).toBe(true);
    });
  });
});
