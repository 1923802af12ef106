import {
  type ChannelAdapter,
  type Controller,
  type Ingress,
  type Outcome,
  type Pipeline,
  PipelinePolicySchema,
  type ReplySender,
  createController,
  createIngress,
  createMemoryQueryPool,
  createMemoryReplyOutbox,
  createOutcomeBus,
  createReplySender,
  createRouter,
  isSwitchboardError,
  silentLogger,
} from '@switchboard/core';
import { type FakeLine, startFakeLine } from '@switchboard/testkit/line';
import Fastify, { type FastifyInstance } from 'fastify';
import { createLineChannel } from '../src/channel.js';
import { LineChannelSchema } from '../src/options.js';

/** Answers each turn with `echo: <text>`, or with what `answer` makes of the text. */
function echoPipeline(answer: (text: string) => string[]): Pipeline {
  return {
    id: 'echo',
    run: async (query) => ({ replies: answer(query.text).map((text) => ({ text })) }),
  };
}

export interface LineGateway {
  fake: FakeLine;
  channel: ChannelAdapter;
  /** `http://127.0.0.1:<port>/line/ln`: the webhook URL. */
  webhookUrl: string;
  outcomes: Outcome[];
  stop(): Promise<void>;
}

export interface LineGatewayOptions {
  /** `channels[]` keys besides id, type, secrets and api_url. */
  config?: Record<string, unknown>;
  /** What the pipeline answers to a text. Default: one reply, `echo: <text>`. */
  answer?: (text: string) => string[];
  /** Replaces the engine's ingress (a refusal, a failure). */
  ingress?: Ingress;
  /** Leaves the channel unstarted. */
  started?: boolean;
}

/**
 * The LINE channel on a real server in front of the real core engine (ingress, memory pool,
 * controller, memory outbox, reply sender), its API on the fake LINE: what `switchboard serve`
 * wires, in one process.
 */
export async function startLineGateway(options: LineGatewayOptions = {}): Promise<LineGateway> {
  const fake = await startFakeLine();
  const pipeline = echoPipeline(options.answer ?? ((text) => [`echo: ${text}`]));
  const outcomes: Outcome[] = [];
  const bus = createOutcomeBus();
  bus.subscribe((outcome) => outcomes.push(outcome));
  const policy = PipelinePolicySchema.parse({ id: pipeline.id });
  const pool = createMemoryQueryPool({
    concurrency: { global: 4, perSession: 1 },
    limits: { maxPending: 100, maxPendingPerSession: 10 },
    pipelines: [policy],
  });
  const config = LineChannelSchema.parse({
    id: 'ln',
    type: 'line',
    channel_secret: fake.channelSecret,
    channel_access_token: fake.channelAccessToken,
    api_url: fake.url,
    ...options.config,
  });
  const server: FastifyInstance = Fastify();
  // The gateway's error answer, as far as these tests read it.
  server.setErrorHandler((error: Error & { code?: string; statusCode?: number }, _request, reply) => {
    const status = isSwitchboardError(error) ? error.status : (error.statusCode ?? 500);
    void reply.code(status).send({ error: { code: error.code, message: error.message } });
  });
  const channel = createLineChannel({ config, server, logger: silentLogger });
  const ingress =
    options.ingress ??
    createIngress({
      pool,
      router: () => createRouter({ default: pipeline.id }, { pipelines: [pipeline.id] }),
      outcomes: bus,
      channelPolicy: () => config.policy,
    });
  const outbox = createMemoryReplyOutbox();
  const sender: ReplySender = createReplySender({
    outbox,
    channel: () => channel,
    policy: () => ({ ...config.outbound, retry: { baseDelayMs: 50, maxDelayMs: 200 } }),
    outcomes: bus,
  });
  const controller: Controller = createController({
    pool,
    pipelines: new Map([[pipeline.id, pipeline]]),
    policies: new Map([[policy.id, policy]]),
    outcomes: bus,
    outbox,
  });
  controller.start();
  sender.start();
  if (options.started !== false) await channel.start({ ingress, logger: silentLogger });
  const url = await server.listen({ host: '127.0.0.1', port: 0 });
  return {
    fake,
    channel,
    webhookUrl: `${url}/line/ln`,
    outcomes,
    async stop() {
      await channel.stop();
      await controller.stop({ drainTimeoutMs: 50 });
      await sender.stop({ drainTimeoutMs: 50 });
      await server.close();
      await fake.close();
    },
  };
}
