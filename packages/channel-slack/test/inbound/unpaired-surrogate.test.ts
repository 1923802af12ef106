import {
  type ChannelAdapter,
  type Controller,
  type Outcome,
  type Pipeline,
  PipelinePolicySchema,
  createController,
  createIngress,
  createMemoryQueryPool,
  createOutcomeBus,
  createRouter,
  silentLogger,
} from '@switchboard/core';
import { instantDelivery } from '@switchboard/contracts';
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
import { SlackChannelSchema } from '../../src/options.js';
import { createSlackChannel } from '../../src/channel.js';

const SECRET = 'signing-secret';
const LONE_SURROGATE = '\ud800';

/** Answers every turn without a reply: the test is about the way in, not about sending. */
const quiet: Pipeline = { id: 'quiet', run: async () => ({ replies: [] }) };

interface Gateway {
  url: string;
  outcomes: Outcome[];
}

/**
 * The Slack channel on a real server in front of the real core engine (ingress, memory pool,
 * controller, outcome bus), its Web API on the fake Slack: what `switchboard serve` wires.
 */
describe('slack Events API with an unpaired UTF-16 surrogate in an id', () => {
  let fake: FakeSlack;
  let server: FastifyInstance;
  let channel: ChannelAdapter;
  let controller: Controller;
  afterEach(async () => {
    await channel.stop();
    await controller.stop({ drainTimeoutMs: 50 });
    await server.close();
    await fake.close();
  });

  async function startGateway(): Promise<Gateway> {
    fake = await startFakeSlack();
    const outcomes: Outcome[] = [];
    const bus = createOutcomeBus();
    bus.subscribe((outcome) => outcomes.push(outcome));
    const policy = PipelinePolicySchema.parse({ id: quiet.id });
    const pool = createMemoryQueryPool({
      concurrency: { global: 4, perSession: 1 },
      limits: { maxPending: 100, maxPendingPerSession: 10 },
      pipelines: [policy],
    });
    const config = SlackChannelSchema.parse({
      id: 'sl',
      type: 'slack',
      bot_token: 'xoxb-test',
      signing_secret: SECRET,
      bot_user_id: 'UBOT',
      api_url: fake.apiUrl,
      // Threads are sessions of their own: `thread_ts` becomes part of the session key.
      session_scope: 'thread',
      group: { require_mention: false },
    });
    server = Fastify();
    channel = createSlackChannel({ config, server, logger: silentLogger });
    const ingress = createIngress({
      pool,
      router: () => createRouter({ default: quiet.id }, { pipelines: [quiet.id] }),
      outcomes: bus,
      channelPolicy: () => config.policy,
    });
    const sending = instantDelivery(bus);
    controller = createController({
      pool,
      pipelines: new Map([[quiet.id, quiet]]),
      policies: new Map([[policy.id, policy]]),
      outcomes: bus,
      outbox: sending.outbox,
    });
    controller.start();
    await channel.start({ ingress, logger: silentLogger });
    return { url: await server.listen({ host: '127.0.0.1', port: 0 }), outcomes };
  }

  describe.each([
    ['channel', { channel: LONE_SURROGATE, channel_type: 'channel' }],
    ['thread_ts', { channel: 'C0001', thread_ts: LONE_SURROGATE }],
  ])('when a correctly signed event holds it in %s', (_field, fields) => {
    it('answers 200, so Slack does not redeliver, and the message ends completed', async () => {
      const gateway = await startGateway();
      const event = messageEvent({ text: 'hello', ...fields });
      const answer = await sendEvent(gateway.url, 'sl', eventEnvelope(event), { signingSecret: SECRET });
      expect(answer.status).toBe(200);
      const outcome = await eventually(() =>
        gateway.outcomes.find((recorded) => recorded.kind !== 'duplicate'),
      );
      expect(outcome).toMatchObject({ kind: 'completed', message: { text: 'hello' } });
    });
  });
});
