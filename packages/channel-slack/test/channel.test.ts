import {
  type ChannelAdapter,
  type InboundMessage,
  type IngressResult,
  type Logger,
  isSwitchboardError,
  silentLogger,
} from '@switchboard/core';
import { eventually } from '@switchboard/testkit/eventually';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { SlackChannelSchema } from '../src/options.js';
import { createSlackChannel } from '../src/channel.js';
import { slackSignature } from '../src/inbound/verify.js';
import {
  appMention,
  channelMessageWithMention,
  directMessage,
  channelJoin,
  messageChanged,
  reactionAdded,
  warningLogger,
} from './fixtures.js';

const SECRET = 'signing-secret';
const QUEUED: IngressResult = {
  status: 'queued',
  pipeline: 'echo',
  session: 'slack:sl:person:D0001',
  rule: null,
};

interface Accepted {
  message: InboundMessage;
  deliveryId: string | undefined;
}

/** An ingress that records what it gets and answers with `answer` (queued by default). */
function recordingIngress(answer: () => Promise<IngressResult> = async () => QUEUED) {
  const accepted: Accepted[] = [];
  return {
    accepted,
    ingress: {
      accept(message: InboundMessage, deliveryId?: string) {
        accepted.push({ message, deliveryId });
        return answer();
      },
      drop(): void {
        // Slack redelivers what was not answered 2xx: the channel never drops.
        throw new Error('unexpected drop');
      },
    },
  };
}

let server: FastifyInstance | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** A fastify server with the app's error answer shape and a Slack channel on it (not started). */
async function setUp(
  options: { ackDeadlineMs?: number; logger?: Logger } = {},
): Promise<{ server: FastifyInstance; channel: ChannelAdapter }> {
  server = Fastify();
  server.setErrorHandler((error: Error & { code?: string; statusCode?: number }, _request, reply) => {
    const status = isSwitchboardError(error) ? error.status : (error.statusCode ?? 500);
    void reply.code(status).send({ error: { code: error.code, message: error.message } });
  });
  const config = SlackChannelSchema.parse({
    id: 'sl',
    type: 'slack',
    bot_token: 'xoxb-test',
    signing_secret: SECRET,
    bot_user_id: 'UBOT',
  });
  const channel = createSlackChannel({ config, server, logger: silentLogger, ...options });
  await server.ready();
  return { server, channel };
}

function envelope(event: Record<string, unknown>, eventId = 'Ev0001') {
  return {
    token: 'legacy',
    team_id: 'T0001',
    api_app_id: 'A0001',
    type: 'event_callback',
    event_id: eventId,
    event_time: 1718000000,
    event,
  };
}

function post(
  target: FastifyInstance,
  body: unknown,
  options: { secret?: string; ageSec?: number; contentType?: string } = {},
) {
  const raw = typeof body === 'string' ? body : JSON.stringify(body);
  const timestamp = String(Math.floor(Date.now() / 1000) - (options.ageSec ?? 0));
  return target.inject({
    method: 'POST',
    url: '/slack/sl/events',
    headers: {
      'content-type': options.contentType ?? 'application/json',
      'x-slack-request-timestamp': timestamp,
      'x-slack-signature': slackSignature(options.secret ?? SECRET, timestamp, raw),
    },
    payload: raw,
  });
}

describe('createSlackChannel (Events API)', () => {
  describe('when the channel has not started', () => {
    it('answers 503 and reports not ready', async () => {
      const { server, channel } = await setUp();
      const answer = await post(server, envelope(directMessage));
      expect(answer.statusCode).toBe(503);
      expect(answer.json().error.code).toBe('SB_DRAINING');
      expect(channel.health().ready).toBe(false);
    });
  });

  describe('when Slack verifies the request URL', () => {
    it('answers the challenge', async () => {
      const { server, channel } = await setUp();
      await channel.start({ ingress: recordingIngress().ingress, logger: silentLogger });
      const answer = await post(server, { token: 'legacy', challenge: 'c-123', type: 'url_verification' });
      expect(answer.statusCode).toBe(200);
      expect(answer.json()).toEqual({ challenge: 'c-123' });
      expect(channel.health().ready).toBe(true);
    });
  });

  describe('when the signature is wrong, stale or missing', () => {
    it('answers 401 and hands nothing to ingress', async () => {
      const { server, channel } = await setUp();
      const { ingress, accepted } = recordingIngress();
      await channel.start({ ingress, logger: silentLogger });
      expect((await post(server, envelope(directMessage), { secret: 'other' })).statusCode).toBe(401);
      expect((await post(server, envelope(directMessage), { ageSec: 301 })).statusCode).toBe(401);
      const unsigned = await server.inject({
        method: 'POST',
        url: '/slack/sl/events',
        headers: { 'content-type': 'application/json' },
        payload: '{}',
      });
      expect(unsigned.statusCode).toBe(401);
      expect(unsigned.json().error.code).toBe('SB_HTTP_UNAUTHORIZED');
      expect(accepted).toEqual([]);
    });
  });

  describe('when a message arrives', () => {
    it('answers 200 only after ingress has accepted it, keyed <channel>:<ts>', async () => {
      const { server, channel } = await setUp();
      let release: (result: IngressResult) => void = () => {};
      const { ingress, accepted } = recordingIngress(() => new Promise((resolve) => (release = resolve)));
      await channel.start({ ingress, logger: silentLogger });

      let answered = false;
      const answer = post(server, envelope(directMessage)).then((response) => {
        answered = true;
        return response;
      });
      await eventually(() => accepted.length === 1);
      // Ingress has the message but has not resolved: the request is still unanswered.
      expect(answered).toBe(false);
      release(QUEUED);
      expect((await answer).statusCode).toBe(200);
      expect(accepted).toHaveLength(1);
      expect(accepted[0]?.deliveryId).toBe('D0001:1718000001.000200');
      expect(accepted[0]?.message).toMatchObject({
        channel: 'sl',
        chat: { type: 'person', id: 'D0001' },
        text: 'hello there',
      });
    });
  });

  describe('when a mention arrives as both a message and an app_mention event', () => {
    it('hands both to ingress under the same delivery id, so the second is a duplicate', async () => {
      const { server, channel } = await setUp();
      const { ingress, accepted } = recordingIngress();
      await channel.start({ ingress, logger: silentLogger });
      expect((await post(server, envelope(channelMessageWithMention, 'Ev0001'))).statusCode).toBe(200);
      expect((await post(server, envelope(appMention, 'Ev0002'))).statusCode).toBe(200);
      expect(accepted.map((entry) => entry.deliveryId)).toEqual([
        'C0001:1718000000.000100',
        'C0001:1718000000.000100',
      ]);
    });
  });

  describe('when ingress refuses the message', () => {
    it('answers 503 with Retry-After so that Slack redelivers', async () => {
      const { server, channel } = await setUp();
      const { ingress } = recordingIngress(async () => ({
        status: 'refused',
        reason: 'queue_full',
        retryAfterMs: 2000,
      }));
      await channel.start({ ingress, logger: silentLogger });
      const answer = await post(server, envelope(directMessage));
      expect(answer.statusCode).toBe(503);
      expect(answer.headers['retry-after']).toBe('2');
      expect(answer.json().error.code).toBe('SB_QUEUE_FULL');
    });
  });

  describe('when ingress fails to journal the message', () => {
    it('answers 500 so that Slack redelivers', async () => {
      const { server, channel } = await setUp();
      const { ingress, accepted } = recordingIngress(async () => {
        throw new Error('disk I/O error');
      });
      await channel.start({ ingress, logger: silentLogger });
      const answer = await post(server, envelope(directMessage));
      expect(answer.statusCode).toBe(500);
      expect(accepted).toHaveLength(1);
    });
  });

  describe('when the journal write outlasts the ack deadline', () => {
    it('answers 503 at the deadline instead of keeping Slack waiting', async () => {
      const { server, channel } = await setUp({ ackDeadlineMs: 150 });
      const { ingress } = recordingIngress(() => new Promise(() => {}));
      await channel.start({ ingress, logger: silentLogger });
      const started = Date.now();
      const answer = await post(server, envelope(directMessage));
      expect(answer.statusCode).toBe(503);
      expect(answer.json().error.code).toBe('SB_STORE_UNAVAILABLE');
      expect(Date.now() - started).toBeLessThan(1000);
    });
  });

  describe('when the event is not a message someone wrote', () => {
    it('answers 200 without involving ingress', async () => {
      const { server, channel } = await setUp();
      const { ingress, accepted } = recordingIngress();
      await channel.start({ ingress, logger: silentLogger });
      expect((await post(server, envelope(channelJoin))).statusCode).toBe(200);
      expect(accepted).toEqual([]);
    });
  });

  describe('when a message is edited or reacted to', () => {
    it('hands ingress an edited and a reaction event', async () => {
      const { server, channel } = await setUp();
      const { ingress, accepted } = recordingIngress();
      await channel.start({ ingress, logger: silentLogger });
      expect((await post(server, envelope(messageChanged))).statusCode).toBe(200);
      expect((await post(server, envelope(reactionAdded))).statusCode).toBe(200);
      expect(accepted.map(({ message }) => message.event?.type)).toEqual(['edited', 'reaction']);
    });
  });

  describe('when the body is malformed or no Events API callback', () => {
    it('answers 400 naming the problem, and 415 for other content types', async () => {
      const { server, channel } = await setUp();
      const { ingress, accepted } = recordingIngress();
      await channel.start({ ingress, logger: silentLogger });
      const broken = await post(server, '{"type": "event_callback", ');
      expect(broken.statusCode).toBe(400);
      expect(broken.json().error).toEqual({ code: 'SB_HTTP_BAD_REQUEST', message: 'body: malformed JSON' });
      // Bolt read `{"name": …}` as an options request and threw a TypeError: 500.
      for (const body of ['{"name":"x"}', '{"type":"block_actions","actions":[]}']) {
        const notEvent = await post(server, body);
        expect(notEvent.statusCode).toBe(400);
        expect(notEvent.json().error).toEqual({
          code: 'SB_HTTP_BAD_REQUEST',
          message: 'body.type: expected event_callback, url_verification, ssl_check or app_rate_limited',
        });
      }
      expect((await post(server, 'hello', { contentType: 'text/plain' })).statusCode).toBe(415);
      expect(accepted).toEqual([]);
    });
  });

  describe('when a signed event_callback holds an event that cannot be read', () => {
    it('acknowledges it 200, so that Slack does not redeliver it, and logs the problem; ingress gets nothing', async () => {
      const { logger, lines } = warningLogger();
      const { server, channel } = await setUp({ logger });
      const { ingress, accepted } = recordingIngress();
      await channel.start({ ingress, logger: silentLogger });
      const form = (value: unknown) => `payload=${encodeURIComponent(JSON.stringify(value))}`;
      // Each got a 500 from a TypeError inside Bolt before the channel's own checks ran.
      const cases: Array<[string, string, string | undefined]> = [
        [
          JSON.stringify(envelope({ ...directMessage, user: null })),
          'event.user: expected a string or an object',
          undefined,
        ],
        [
          JSON.stringify(envelope({ ...directMessage, channel: null })),
          'event.channel: expected a string or an object',
          undefined,
        ],
        [
          form({ ...envelope(directMessage), event: false }),
          'event: expected an object',
          'application/x-www-form-urlencoded',
        ],
        [
          JSON.stringify({ ...envelope(directMessage), authorizations: [null] }),
          'authorizations: expected a list of objects',
          undefined,
        ],
        [
          JSON.stringify({ ...envelope(directMessage), team_id: 'constructor' }),
          'team_id: expected a Slack id (capital letters and digits)',
          undefined,
        ],
        // Routed by Bolt, refused by the normalizer: answered the same way.
        [
          JSON.stringify(envelope({ type: 'message', user: 'U0001', text: 'hi', ts: '1.2' })),
          'event.channel: expected a non-empty string',
          undefined,
        ],
      ];
      for (const [body, problem, contentType] of cases) {
        const answer = await post(server, body, contentType === undefined ? {} : { contentType });
        expect([answer.statusCode, answer.body, problem]).toEqual([200, '', problem]);
        expect(lines.at(-1)).toMatchObject({ msg: 'malformed slack event acknowledged', problem });
      }
      expect(accepted).toEqual([]);
    });
  });

  describe('when the channel has stopped', () => {
    it('answers 503 again', async () => {
      const { server, channel } = await setUp();
      await channel.start({ ingress: recordingIngress().ingress, logger: silentLogger });
      await channel.stop();
      expect((await post(server, envelope(directMessage))).statusCode).toBe(503);
      expect(channel.health().ready).toBe(false);
    });
  });
});
