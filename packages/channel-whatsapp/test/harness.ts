import {
  type ChannelAdapter,
  type Controller,
  type Ingress,
  type Logger,
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
import { type FakeWhatsApp, startFakeWhatsApp } from '@switchboard/testkit/whatsapp';
import Fastify, { type FastifyInstance } from 'fastify';
import { createWhatsAppChannel } from '../src/channel.js';
import { type WhatsAppChannelConfig, WhatsAppChannelSchema } from '../src/options.js';

export interface WhatsAppGateway {
  fake: FakeWhatsApp;
  channel: ChannelAdapter;
  config: WhatsAppChannelConfig;
  /** `http://127.0.0.1:<port>/whatsapp/wa`: the callback URL. */
  webhookUrl: string;
  outcomes: Outcome[];
  stop(): Promise<void>;
}

export interface WhatsAppGatewayOptions {
  /** `channels[]` keys besides id, type, secrets and api_url. */
  config?: Record<string, unknown>;
  /** What the pipeline answers to a text. Default: one reply, `echo: <text>`. */
  answer?: (text: string) => string[];
  /** Replaces the engine's ingress (a refusal, a failure). */
  ingress?: Ingress;
  logger?: Logger;
}

/** Pacing off: these tests are about the calls, not the Cloud API's pair rate. */
const UNPACED = { rate: { enabled: false } };

/**
 * The WhatsApp channel on a real server in front of the real core engine (ingress, memory pool,
 * controller, memory outbox, reply sender), its API on the fake Cloud API: what `switchboard
 * serve` wires, in one process.
 */
export async function startWhatsAppGateway(options: WhatsAppGatewayOptions = {}): Promise<WhatsAppGateway> {
  const fake = await startFakeWhatsApp();
  const answer = options.answer ?? ((text: string) => [`echo: ${text}`]);
  const pipeline: Pipeline = {
    id: 'echo',
    run: async (query) => ({ replies: answer(query.text).map((text) => ({ text })) }),
  };
  const outcomes: Outcome[] = [];
  const bus = createOutcomeBus();
  bus.subscribe((outcome) => outcomes.push(outcome));
  const policy = PipelinePolicySchema.parse({ id: pipeline.id });
  const pool = createMemoryQueryPool({
    concurrency: { global: 4, perSession: 1 },
    limits: { maxPending: 100, maxPendingPerSession: 10 },
    pipelines: [policy],
  });
  const config = WhatsAppChannelSchema.parse({
    id: 'wa',
    type: 'whatsapp',
    phone_number_id: fake.phoneNumberId,
    access_token: fake.accessToken,
    app_secret: fake.appSecret,
    verify_token: fake.verifyToken,
    api_url: fake.url,
    outbound: UNPACED,
    ...options.config,
  });
  const server: FastifyInstance = Fastify();
  // The gateway's error answer, as far as these tests read it.
  server.setErrorHandler((error: Error & { code?: string; statusCode?: number }, _request, reply) => {
    const status = isSwitchboardError(error) ? error.status : (error.statusCode ?? 500);
    void reply.code(status).send({ error: { code: error.code, message: error.message } });
  });
  const channel = createWhatsAppChannel({ config, server, logger: options.logger ?? silentLogger });
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
  await channel.start({ ingress, logger: silentLogger });
  const url = await server.listen({ host: '127.0.0.1', port: 0 });
  return {
    fake,
    channel,
    config,
    webhookUrl: `${url}/whatsapp/wa`,
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
