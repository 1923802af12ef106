import { type ChannelAdapter, silentLogger } from '@switchboard/core';
import { recordingIngress } from '@switchboard/contracts';
import { type FakeDiscord, startFakeDiscord } from '@switchboard/testkit/discord';
import { eventually } from '@switchboard/testkit/eventually';
import { inboundMessage } from '@switchboard/testkit/inbound-message';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DiscordChannelSchema } from '../src/options.js';
import { createDiscordChannel } from '../src/index.js';

/** These tests are not about pacing: calls go out as fast as they come. */
const NO_PACING = { enabled: false, per_bot: null, per_chat: null, per_group: null };

const DM = '1240000000000000009';
const alice = { id: '234567890123456789', username: 'alice' };

// Paths the YAML cannot reach (factory options) run in process against the fake Discord.
describe('createDiscordChannel (in process, against the fake Discord)', () => {
  let fake: FakeDiscord;
  const started: ChannelAdapter[] = [];
  beforeEach(async () => {
    fake = await startFakeDiscord();
  });
  afterEach(async () => {
    await Promise.all(started.splice(0).map((channel) => channel.stop()));
    await fake.close();
  });

  function channel(startTimeoutMs?: number): ChannelAdapter {
    const config = DiscordChannelSchema.parse({
      id: 'dc',
      type: 'discord',
      token: fake.token,
      api_url: fake.url,
      outbound: { concurrency: 8, rate: NO_PACING },
    });
    const created = createDiscordChannel({
      config,
      logger: silentLogger,
      ...(startTimeoutMs === undefined ? {} : { startTimeoutMs }),
    });
    started.push(created);
    return created;
  }

  describe('when the gateway is not ready within startTimeoutMs', () => {
    it('rejects start with a retryable error and closes the client', async () => {
      fake.failNext(1, { hang: true }); // GET /gateway/bot never answers
      const dc = channel(300);
      const { ingress } = recordingIngress(async () => ({ status: 'duplicate' }));

      const error = await dc
        .start({ ingress, logger: silentLogger })
        .catch((rejection: unknown) => rejection);
      expect(error).toMatchObject({
        code: 'SB_CHANNEL_UNREACHABLE',
        retryable: true,
        message:
          'channels[dc]: could not connect to the Discord gateway: the gateway was not ready within 300 ms',
      });
      expect(dc.health().ready).toBe(false);
      expect(fake.stats.connections).toBe(0);
    });
  });

  describe('when started again after a stop', () => {
    it('is ready again and hands new gateway messages to the ingress', async () => {
      const { ingress, accepted } = recordingIngress(async () => ({ status: 'duplicate' }));
      const dc = channel();
      await dc.start({ ingress, logger: silentLogger });
      await dc.stop();
      expect(dc.health().ready).toBe(false);
      await dc.start({ ingress, logger: silentLogger });
      expect(dc.health().ready).toBe(true);
      const sent = fake.messageCreate({ channel_id: DM, channel_type: 1, author: alice, content: 'again' });
      await eventually(() => accepted.length === 1);
      expect(accepted[0]?.platform_message_id).toBe(sent.id);
    });
  });

  describe('when the ingress fails for a gateway message', () => {
    it('records it as dropped/ingress_failed, since Discord will not send it again', async () => {
      const failure = new Error('journal write failed');
      const { ingress, accepted, drops } = recordingIngress(async () => {
        throw failure;
      });
      const dc = channel();
      await dc.start({ ingress, logger: silentLogger });
      const sent = fake.messageCreate({ channel_id: DM, channel_type: 1, author: alice, content: 'hi' });

      await eventually(() => drops.length === 1);
      expect(accepted.map((message) => message.platform_message_id)).toEqual([sent.id]);
      expect(drops).toEqual([{ message: accepted[0], reason: 'ingress_failed', error: failure }]);
    });
  });

  describe('when the channel stops while the ingress refuses a message', () => {
    it('records it as dropped/refused before stop resolves', async () => {
      const { ingress, accepted, drops } = recordingIngress(async () => ({
        status: 'refused',
        reason: 'draining',
        retryAfterMs: 60_000,
      }));
      const dc = channel();
      await dc.start({ ingress, logger: silentLogger });
      fake.messageCreate({ channel_id: DM, channel_type: 1, author: alice, content: 'too late' });
      await eventually(() => accepted.length === 1);

      await dc.stop();
      expect(accepted).toHaveLength(2);
      expect(drops).toEqual([{ message: accepted[0], reason: 'refused', error: undefined }]);
    });
  });

  describe('when posting a reply hangs and the send deadline passes', () => {
    it('aborts the request and rejects with the deadline reason', async () => {
      const { ingress, accepted } = recordingIngress(async () => ({
        status: 'queued',
        pipeline: 'echo',
        session: 's',
        rule: null,
      }));
      const dc = channel();
      await dc.start({ ingress, logger: silentLogger });
      fake.messageCreate({ channel_id: DM, channel_type: 1, author: alice, content: 'answer me' });
      const [origin] = await eventually(() => accepted.length === 1 && accepted);
      if (origin === undefined) throw new Error('no message accepted');

      fake.failNext(1, { hang: true });
      const deadline = new AbortController();
      const sent = dc.send(origin, [{ text: 'hello' }], deadline.signal).catch((error: unknown) => error);
      await eventually(() => fake.requests.some((request) => request.method === 'POST'));
      const reason = new Error('send deadline passed');
      deadline.abort(reason);
      expect(await sent).toBe(reason);
      expect(fake.sentMessages()).toEqual([]);
    });
  });

  describe('when a reply carries files', () => {
    const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 1, 2, 253, 254, 255]);
    const origin = inboundMessage({
      platform: 'discord',
      channel: 'dc',
      chat: { type: 'person', id: DM },
      platform_message_id: '1250000000000000001',
    });

    it('uploads each as a message of its own (multipart files[0]), the first a reply, then posts the text', async () => {
      const wav = Buffer.from('RIFF....WAVEfmt ');
      await channel().send(
        origin,
        [
          {
            text: 'listen',
            attachments: [
              { type: 'image', data: png.toString('base64'), name: 'chart.png', mime_type: 'image/png' },
              { type: 'audio', data: wav.toString('base64'), mime_type: 'audio/wav' },
            ],
          },
        ],
        new AbortController().signal,
      );

      const sent = fake.sentMessages();
      expect(sent.map((message) => message.files.map((file) => file.filename))).toEqual([
        ['chart.png'],
        ['audio.wav'],
        [],
      ]);
      expect(sent[0]?.files[0]?.bytes.equals(png)).toBe(true);
      expect(sent[0]?.files[0]?.contentType).toBe('image/png');
      expect(sent[1]?.files[0]?.bytes.equals(wav)).toBe(true);
      expect(sent[0]?.body.message_reference).toEqual({
        message_id: '1250000000000000001',
        fail_if_not_exists: false,
      });
      expect(sent[1]?.body.message_reference).toBeUndefined();
      expect(sent[2]?.body.content).toBe('listen');
    });

    it('uploads again after a 500, and the file is posted once', async () => {
      fake.failNext(1, { status: 500 });
      await channel().send(
        origin,
        [{ attachments: [{ type: 'image', data: png.toString('base64') }] }],
        new AbortController().signal,
      );
      expect(fake.requests.filter((request) => request.method === 'POST')).toHaveLength(2);
      const sent = fake.sentMessages();
      expect(sent).toHaveLength(1);
      expect(sent[0]?.files[0]?.bytes.equals(png)).toBe(true);
    });
  });
});
