import { type ConformanceIngress, conformanceIngress } from '@switchboard/contracts';
import { type ChannelAdapter, isSwitchboardError, silentLogger } from '@switchboard/core';
import { inboundMessage } from '@switchboard/testkit/inbound-message';
import { postUnfinished } from '@switchboard/testkit/post-webhook';
import { type FakeTeams, messageActivity, startFakeTeams } from '@switchboard/testkit/teams';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { activityRefKey, createTeamsChannel } from '../src/index.js';
import { TeamsChannelSchema } from '../src/options.js';

const PATH = '/teams/ms/messages';

interface World {
  fake: FakeTeams;
  server: FastifyInstance;
  url: string;
  channel: ChannelAdapter;
  ingress: ConformanceIngress;
}

let world: World | undefined;

async function startWorld(overrides: Record<string, unknown> = {}, started = true): Promise<World> {
  const fake = await startFakeTeams();
  const config = TeamsChannelSchema.parse({
    id: 'ms',
    type: 'teams',
    app_id: fake.appId,
    app_password: fake.appPassword,
    openid_metadata_url: fake.openIdMetadataUrl,
    token_url: fake.tokenUrl,
    ...overrides,
  });
  const server = Fastify();
  server.setErrorHandler((error: Error & { code?: string }, _request, reply) => {
    const status = isSwitchboardError(error) ? (error.status ?? 500) : 500;
    void reply.code(status).send({ error: { code: error.code, message: error.message } });
  });
  const channel = createTeamsChannel({ config, server, logger: silentLogger });
  const ingress = conformanceIngress();
  if (started) await channel.start({ ingress: ingress.ingress, logger: silentLogger });
  const url = await server.listen({ host: '127.0.0.1', port: 0 });
  world = { fake, server, url, channel, ingress };
  return world;
}

afterEach(async () => {
  await world?.channel.stop();
  await world?.server.close();
  await world?.fake.close();
  world = undefined;
});

function personal(fake: FakeTeams, text: string, conversationId = 'a:dm') {
  return messageActivity(fake, { conversationType: 'personal', conversationId, text });
}

describe('createTeamsChannel', () => {
  describe('when an activity is signed by the connector', () => {
    let w: World;
    beforeEach(async () => {
      w = await startWorld();
    });

    it('hands a message activity to the ingress, keyed on conversation and activity id', async () => {
      const activity = personal(w.fake, 'hello');
      const answer = await w.fake.post(w.url, PATH, activity);
      expect(answer.status).toBe(200);
      expect(w.ingress.accepted).toHaveLength(1);
      expect(w.ingress.accepted[0]).toMatchObject({
        platform: 'teams',
        channel: 'ms',
        chat: { type: 'person', id: 'a:dm' },
        text: 'hello',
        platform_message_id: activityRefKey({
          serviceUrl: w.fake.serviceUrl,
          conversationId: 'a:dm',
          activityId: activity.id,
        }),
      });
    });

    it('acknowledges other activity types without offering them', async () => {
      const update = {
        type: 'conversationUpdate',
        channelId: 'msteams',
        serviceUrl: w.fake.serviceUrl,
        membersAdded: [],
      };
      expect((await w.fake.post(w.url, PATH, update)).status).toBe(200);
      expect(w.ingress.accepted).toEqual([]);
    });

    it('acknowledges a message of another Bot Framework channel (Web Chat) without offering it', async () => {
      // A Web Chat client sets from.id itself: it must not pass for the Teams user it names.
      const activity = { ...personal(w.fake, 'hello'), channelId: 'webchat', from: { id: '29:admin' } };
      const answer = await w.fake.post(w.url, PATH, activity);
      expect(answer.status).toBe(200);
      expect(w.ingress.accepted).toEqual([]);
    });

    it('answers 400 naming body.conversation.id when it names a reply chain of no conversation', async () => {
      const answer = await w.fake.post(w.url, PATH, personal(w.fake, 'hello', ';messageid=17'));
      expect(answer.status).toBe(400);
      expect(answer.body).toMatchObject({
        error: { code: 'SB_HTTP_BAD_REQUEST', message: expect.stringMatching(/^body\.conversation\.id: /) },
      });
      expect(w.ingress.accepted).toEqual([]);
    });

    it('answers a message activity missing a field 400 naming it', async () => {
      const { from: _from, ...activity } = personal(w.fake, 'no sender');
      const answer = await w.fake.post(w.url, PATH, activity);
      expect(answer.status).toBe(400);
      expect(answer.body).toMatchObject({
        error: { code: 'SB_HTTP_BAD_REQUEST', message: expect.stringMatching(/^body\.from/) },
      });
      expect(w.ingress.accepted).toEqual([]);
    });
  });

  describe('when the token does not hold for the activity', () => {
    it('answers 401 for another audience, and for a serviceUrl claim that is not the activity’s', async () => {
      const w = await startWorld();
      const activity = personal(w.fake, 'hello');
      const audience = await w.fake.post(w.url, PATH, activity, { audience: 'another-bot' });
      expect(audience.status).toBe(401);
      expect(audience.body).toMatchObject({ error: { message: 'Authorization: claim aud: not accepted' } });
      const moved = await w.fake.post(w.url, PATH, activity, {
        serviceUrlClaim: 'https://elsewhere.invalid/',
      });
      expect(moved.status).toBe(401);
      expect(moved.body).toMatchObject({
        error: { message: "Authorization: the token's serviceUrl claim is not the activity's serviceUrl" },
      });
      expect(w.ingress.accepted).toEqual([]);
    });
  });

  describe('when the token is forged', () => {
    it('answers 401 before reading the body: a body never finished sending is not waited for', async () => {
      const w = await startWorld();
      const forged = await w.fake.signToken({ serviceUrl: w.fake.serviceUrl, forged: true });
      const answer = await postUnfinished(
        `${w.url}${PATH}`,
        { authorization: `Bearer ${forged}` },
        '{"type": "message", "text": "',
      );
      expect(answer).toEqual({
        status: 401,
        body: {
          error: {
            code: 'SB_HTTP_UNAUTHORIZED',
            message: 'Authorization: the signature does not verify',
          },
        },
      });
      expect(w.ingress.accepted).toEqual([]);
    });
  });

  describe('when the signing keys cannot be fetched', () => {
    it('answers 503 SB_CHANNEL_UNREACHABLE, so the connector delivers the activity again', async () => {
      const w = await startWorld({
        openid_metadata_url: 'http://127.0.0.1:1/v1/.well-known/openidconfiguration',
      });
      const answer = await w.fake.post(w.url, PATH, personal(w.fake, 'hello'));
      expect(answer.status).toBe(503);
      expect(answer.body).toMatchObject({ error: { code: 'SB_CHANNEL_UNREACHABLE' } });
      expect(Number(answer.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(w.ingress.accepted).toEqual([]);
    });
  });

  describe('when the app password is wrong', () => {
    it('fails to start with SB_CHANNEL_AUTH_FAILED naming app_password, without it', async () => {
      const w = await startWorld({ app_password: 'not-the-app-password' }, false);
      const error = await w.channel
        .start({ ingress: w.ingress.ingress, logger: silentLogger })
        .catch((err) => err);
      expect(error).toMatchObject({ code: 'SB_CHANNEL_AUTH_FAILED' });
      expect(error.message).toContain('channels[ms].app_password');
      expect(JSON.stringify({ message: error.message, details: error.details })).not.toContain(
        'not-the-app-password',
      );
    });
  });

  describe('when replies go out', () => {
    it('reuses one token for every call, and fetches a new one after the connector refused it', async () => {
      const w = await startWorld();
      const origin = inboundMessage({
        platform: 'teams',
        channel: 'ms',
        chat: { type: 'person', id: 'a:out' },
        platform_message_id: activityRefKey({
          serviceUrl: w.fake.serviceUrl,
          conversationId: 'a:out',
          activityId: '1',
        }),
      });
      const signal = new AbortController().signal;
      await w.channel.send(origin, [{ text: 'one' }], signal);
      await w.channel.send(origin, [{ text: 'two' }], signal);
      expect(w.fake.tokensIssued()).toBe(1);
      w.fake.failNext(1, { kind: 'http_status', status: 401 });
      const refused = await w.channel.send(origin, [{ text: 'refused' }], signal).catch((err) => err);
      expect(refused).toMatchObject({ code: 'SB_CHANNEL_AUTH_FAILED' });
      expect(refused.message).toContain('channels[ms].app_password');
      await w.channel.send(origin, [{ text: 'three' }], signal);
      expect(w.fake.tokensIssued()).toBe(2);
      expect(w.fake.deliveredTo('a:out')).toEqual(['one', 'two', 'three']);
    });

    it('rejects a final SB_CHANNEL_SEND_FAILED for a message whose id names no activity to reply to', async () => {
      const w = await startWorld();
      const origin = inboundMessage({
        platform: 'teams',
        channel: 'ms',
        chat: { type: 'person', id: 'a:none' },
      });
      const error = await w.channel
        .send(origin, [{ text: 'x' }], new AbortController().signal)
        .catch((err) => err);
      expect(error).toMatchObject({ code: 'SB_CHANNEL_SEND_FAILED', retryable: false });
    });
  });
});
