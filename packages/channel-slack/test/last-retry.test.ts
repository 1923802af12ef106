import { type ChannelAdapter, type Ingress, type IngressResult, silentLogger } from '@switchboard/core';
import { recordingIngress } from '@switchboard/contracts';
import { eventually } from '@switchboard/testkit/eventually';
import {
  type FakeSlack,
  eventEnvelope,
  messageEvent,
  sendEvent,
  startFakeSlack,
} from '@switchboard/testkit/slack';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { SlackChannelSchema } from '../src/options.js';
import { createSlackChannel } from '../src/index.js';

/** These tests are not about pacing: calls go out as fast as they come. */
const NO_PACING = { enabled: false, per_bot: null, per_chat: null, per_group: null };

const SECRET = 'signing-secret';
const REFUSED: IngressResult = { status: 'refused', reason: 'queue_full', retryAfterMs: 1_000 };

const refusing = () => recordingIngress(async () => REFUSED);
const failing = () =>
  recordingIngress(async () => {
    throw new Error('disk I/O error');
  });

const started: ChannelAdapter[] = [];
let server: FastifyInstance | undefined;
let fake: FakeSlack | undefined;
afterEach(async () => {
  await Promise.all(started.splice(0).map((channel) => channel.stop()));
  await server?.close();
  await fake?.close();
  server = undefined;
  fake = undefined;
});

describe('slack channel on the last retry (Events API, over HTTP)', () => {
  /** A Slack channel on a gateway-like server listening on loopback; returns its URL. */
  async function startChannel(ingress: Ingress, ackDeadlineMs?: number): Promise<string> {
    server = Fastify();
    server.setErrorHandler((error: Error & { statusCode?: number }, _request, reply) => {
      void reply.code(error.statusCode ?? 500).send({ error: { message: error.message } });
    });
    const config = SlackChannelSchema.parse({
      id: 'sl',
      type: 'slack',
      bot_token: 'xoxb-test',
      signing_secret: SECRET,
      bot_user_id: 'UBOT',
    });
    const channel = createSlackChannel({
      config,
      server,
      logger: silentLogger,
      ...(ackDeadlineMs === undefined ? {} : { ackDeadlineMs }),
    });
    await server.listen({ host: '127.0.0.1', port: 0 });
    await channel.start({ ingress, logger: silentLogger });
    started.push(channel);
    const { port } = server.addresses()[0] as { port: number };
    return `http://127.0.0.1:${port}`;
  }

  describe('when ingress refuses the message on X-Slack-Retry-Num 3', () => {
    it('records it as dropped/refused and answers 200, where earlier tries answered 503', async () => {
      const { ingress, accepted, drops } = refusing();
      const url = await startChannel(ingress);
      const body = eventEnvelope(messageEvent({ channel: 'D0FULL', text: 'last chance' }));

      const second = await sendEvent(url, 'sl', body, { signingSecret: SECRET, retryNum: 2 });
      expect(second.status).toBe(503);
      expect(drops).toEqual([]);

      const last = await sendEvent(url, 'sl', body, { signingSecret: SECRET, retryNum: 3 });
      expect(last.status).toBe(200);
      expect(drops).toHaveLength(1);
      expect(drops[0]).toMatchObject({ reason: 'refused', error: undefined });
      expect(drops[0]?.message).toBe(accepted[1]);
      expect(drops[0]?.message.text).toBe('last chance');
    });
  });

  describe('when ingress throws on X-Slack-Retry-Num 3', () => {
    it('records it as dropped/ingress_failed with the error and answers 200', async () => {
      const { ingress, drops } = failing();
      const url = await startChannel(ingress);
      const body = eventEnvelope(messageEvent({ channel: 'D0DISK', text: 'keep me' }));

      const last = await sendEvent(url, 'sl', body, { signingSecret: SECRET, retryNum: 3 });
      expect(last.status).toBe(200);
      expect(drops).toHaveLength(1);
      expect(drops[0]).toMatchObject({
        reason: 'ingress_failed',
        error: expect.objectContaining({ message: 'disk I/O error' }),
      });
    });
  });

  describe('when the journal write on X-Slack-Retry-Num 3 outlasts the ack deadline and is refused', () => {
    it('answers 200 at the deadline and records it as dropped/refused once ingress answers', async () => {
      let refuse: () => void = () => {};
      const { ingress, drops } = recordingIngress(
        () =>
          new Promise((resolve) => {
            refuse = () => resolve(REFUSED);
          }),
      );
      const url = await startChannel(ingress, 150);
      const body = eventEnvelope(messageEvent({ channel: 'D0SLOW', text: 'slow' }));

      const last = await sendEvent(url, 'sl', body, { signingSecret: SECRET, retryNum: 3 });
      expect(last.status).toBe(200);
      expect(drops).toEqual([]);
      refuse();
      await eventually(() => drops.length === 1);
      expect(drops[0]?.reason).toBe('refused');
    });
  });
});

describe('slack channel on the last retry (Socket Mode, against the fake Slack)', () => {
  async function startChannel(ingress: Ingress): Promise<FakeSlack> {
    const slack = await startFakeSlack();
    fake = slack;
    const config = SlackChannelSchema.parse({
      id: 'sl',
      type: 'slack',
      bot_token: 'xoxb-test',
      app_token: 'xapp-test',
      api_url: slack.apiUrl,
      bot_user_id: 'UBOT',
      outbound: { concurrency: 8, rate: NO_PACING },
    });
    const channel = createSlackChannel({ config, server: Fastify(), logger: silentLogger });
    await channel.start({ ingress, logger: silentLogger });
    started.push(channel);
    await eventually(() => channel.health().ready);
    return slack;
  }

  describe('when ingress refuses the message on retry_attempt 3', () => {
    it('records it as dropped/refused and acknowledges the envelope', async () => {
      const { ingress, accepted, drops } = refusing();
      const slack = await startChannel(ingress);
      const body = eventEnvelope(messageEvent({ channel: 'D0FULL', text: 'last chance' }));

      const envelopeId = await slack.pushSocketEvent(body, { retryAttempt: 3 });
      expect(slack.acknowledged(envelopeId)).toBe(true);
      expect(accepted).toHaveLength(1);
      expect(drops).toEqual([{ message: accepted[0], reason: 'refused', error: undefined }]);
    });
  });

  describe('when ingress throws on retry_attempt 3', () => {
    it('records it as dropped/ingress_failed with the error and acknowledges the envelope', async () => {
      const { ingress, drops } = failing();
      const slack = await startChannel(ingress);
      const body = eventEnvelope(messageEvent({ channel: 'D0DISK', text: 'keep me' }));

      const envelopeId = await slack.pushSocketEvent(body, { retryAttempt: 3 });
      expect(slack.acknowledged(envelopeId)).toBe(true);
      expect(drops).toHaveLength(1);
      expect(drops[0]).toMatchObject({
        reason: 'ingress_failed',
        error: expect.objectContaining({ message: 'disk I/O error' }),
      });
    });
  });
});
