import {
  type ChannelAdapter,
  type ChannelPolicy,
  type Ingress,
  type OutboundPolicy,
  type Outcome,
  type Pipeline,
  type Reply,
  PipelinePolicySchema,
  createController,
  createIngress,
  createMemoryQueryPool,
  createMemoryReplyOutbox,
  createOutcomeBus,
  createReplySender,
  createRouter,
  silentLogger,
} from '@switchboard/core';
import { httpErrorHandler } from '@switchboard/http';
import Fastify, { type FastifyInstance } from 'fastify';

/** What `startChannelEngine` puts behind a channel. */
export interface ChannelEngineOptions {
  /** Builds the channel on the engine's HTTP server, where it mounts its webhook routes. */
  channel: (server: FastifyInstance) => ChannelAdapter;
  /** The channel's parsed `policy` (group admission, session scope). */
  policy: ChannelPolicy;
  /** The channel's parsed `outbound`; retries are shortened to 50–200 ms. */
  outbound: OutboundPolicy;
  /** What the pipeline answers to a text: replies, a string for a text alone. Default: one reply, `echo: <text>`. */
  answer?: (text: string) => Array<string | Reply>;
  /** Replaces the engine's ingress (a refusal, a failure). */
  ingress?: Ingress;
  /** Wraps the engine's ingress (a refusal of one message among others). */
  wrapIngress?: (ingress: Ingress) => Ingress;
  /** Leaves the channel unstarted. */
  started?: boolean;
}

/** The engine behind a channel under test. */
export interface ChannelEngine {
  channel: ChannelAdapter;
  /** The HTTP server's base URL, `http://127.0.0.1:<port>`. */
  url: string;
  /** Every outcome recorded, in order. */
  outcomes: Outcome[];
  /** Stops the channel, the controller, the sender, then the server. */
  stop(): Promise<void>;
}

/**
 * A channel in front of the real core engine — ingress, memory query pool, controller with one
 * echo-like pipeline, memory reply outbox and reply sender — on an HTTP server with the gateway's
 * error answers, started and listening on 127.0.0.1: what `switchboard serve` wires around a
 * channel, in one process, for a channel package's own tests.
 */
export async function startChannelEngine(options: ChannelEngineOptions): Promise<ChannelEngine> {
  const server = Fastify();
  server.setErrorHandler(httpErrorHandler);
  const channel = options.channel(server);
  const answer = options.answer ?? ((text: string) => [`echo: ${text}`]);
  const pipeline: Pipeline = {
    id: 'echo',
    run: async (query) => ({
      replies: answer(query.text).map((reply) => (typeof reply === 'string' ? { text: reply } : reply)),
    }),
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
  const engineIngress =
    options.ingress ??
    createIngress({
      pool,
      router: () => createRouter({ default: pipeline.id }, { pipelines: [pipeline.id] }),
      outcomes: bus,
      channelPolicy: () => options.policy,
    });
  const ingress = options.wrapIngress?.(engineIngress) ?? engineIngress;
  const outbox = createMemoryReplyOutbox();
  const sender = createReplySender({
    outbox,
    channel: () => channel,
    policy: () => ({ ...options.outbound, retry: { baseDelayMs: 50, maxDelayMs: 200 } }),
    outcomes: bus,
  });
  const controller = createController({
    pool,
    pipelines: new Map([[pipeline.id, pipeline]]),
    policies: new Map([[policy.id, policy]]),
    outcomes: bus,
    outbox,
  });
  controller.start();
  sender.start();
  if (options.started !== false) await channel.start({ ingress, logger: silentLogger });
  return {
    channel,
    url: await server.listen({ host: '127.0.0.1', port: 0 }),
    outcomes,
    async stop() {
      await channel.stop();
      await controller.stop({ drainTimeoutMs: 50 });
      await sender.stop({ drainTimeoutMs: 50 });
      await server.close();
    },
  };
}
