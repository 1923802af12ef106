import {
  type ChannelAdapter,
  type Controller,
  type Delivery,
  type Ingress,
  type Logger,
  type QueryPool,
  type MessageStatusStore,
  type Outcome,
  type Pipeline,
  PipelinePolicySchema,
  type PipelinePolicyInput,
  type Query,
  type RoutingConfigInput,
  type Turn,
  createController,
  createIngress,
  createMemoryMessageStatusStore,
  createMemoryQueryPool,
  createMemoryReplyOutbox,
  createOutcomeBus,
  createReplySender,
  createReplyStream,
  createRouter,
  silentLogger,
} from '@switchboard/core';
import {
  type HttpServerShutdown,
  createHttpServerShutdown,
  httpServerOptions,
  registerApiDocs,
  ServerSchema,
} from '@switchboard/http';
import Fastify, { type FastifyInstance } from 'fastify';
import { OpenApiChannelSchema } from '../src/options.js';
import { createOpenApiChannel } from '../src/index.js';

export { eventually } from '@switchboard/testkit/eventually';

/** A pipeline whose turns wait until the test releases them; it counts its runs. */
export interface GatedPipeline extends Pipeline {
  readonly runs: Query[];
  /** Lets every waiting and future turn answer. */
  release(): void;
}

export function createGatedPipeline(id: string): GatedPipeline {
  const runs: Query[] = [];
  let open!: () => void;
  const gate = new Promise<void>((resolve) => {
    open = resolve;
  });
  return {
    id,
    runs,
    release: () => open(),
    async run(query, { signal }) {
      runs.push(query);
      await Promise.race([
        gate,
        new Promise((_, reject) =>
          signal.addEventListener('abort', () => reject(signal.reason), { once: true }),
        ),
      ]);
      return { replies: [{ text: `gated: ${query.text}` }] };
    },
  };
}

/** Answers every turn with its text and counts its runs. */
export function createEchoPipeline(id: string): Pipeline & { readonly runs: Query[] } {
  const runs: Query[] = [];
  return {
    id,
    runs,
    async run(query) {
      runs.push(query);
      return { replies: [{ text: query.text }] };
    },
  };
}

export interface HarnessOptions {
  /** `channels[]` keys beyond id and type. */
  channel?: Record<string, unknown>;
  pipelines?: Array<{ pipeline: Pipeline; policy?: Partial<PipelinePolicyInput> }>;
  routing?: RoutingConfigInput;
  maxPending?: number;
  /** The server's body limit in bytes. */
  bodyLimit?: number;
  /** `server` keys beyond body_limit (request_timeout…). */
  server?: Record<string, unknown>;
  /** Start the channel and the controller; default true. */
  start?: boolean;
  sseHeartbeatMs?: number;
  /** Delays every enqueue into the pool, as a journal write or a Redis round trip would. */
  enqueueDelayMs?: number;
  /** Least time between two previews of a streamed answer, ms. Default: 1 s. */
  editIntervalMs?: number;
  /** The channel's logger. Default: silent. */
  logger?: Logger;
  /** This replica's id, as the gateway passes it when replicas share the pool. Default: none. */
  replicaId?: string;
}

export interface Harness {
  server: FastifyInstance;
  /** The app's shutdown of the server: `drain`, then `close` within a deadline. */
  httpShutdown: HttpServerShutdown;
  channel: ChannelAdapter;
  controller: Controller;
  pool: QueryPool;
  ingress: Ingress;
  statuses: MessageStatusStore;
  outcomes: Outcome[];
  startChannel(): Promise<void>;
  close(): Promise<void>;
}

/**
 * A real fastify server with the real channel in front of the real core engine: ingress, memory
 * pool, controller and outcome bus, with a memory status store.
 */
export async function createHarness(options: HarnessOptions = {}): Promise<Harness> {
  const pipelineList = options.pipelines ?? [{ pipeline: createEchoPipeline('echo') }];
  const policies = pipelineList.map(({ pipeline, policy }) =>
    PipelinePolicySchema.parse({ id: pipeline.id, ...policy }),
  );
  const bus = createOutcomeBus();
  const outcomes: Outcome[] = [];
  bus.subscribe((outcome) => outcomes.push(outcome));
  const turnListeners = new Set<(turn: Turn) => void>();
  const storedListeners = new Set<(delivery: Delivery) => void>();
  const outbox = createMemoryReplyOutbox();

  const pool = createMemoryQueryPool({
    concurrency: { global: 20, perSession: 1 },
    limits: { maxPending: options.maxPending ?? 10_000, maxPendingPerSession: 500 },
    pipelines: policies,
  });
  const router = createRouter(options.routing ?? { default: pipelineList[0]?.pipeline.id ?? 'echo' }, {
    pipelines: policies.map((policy) => policy.id),
  });
  const { enqueueDelayMs } = options;
  const ingress = createIngress({
    pool:
      enqueueDelayMs === undefined
        ? pool
        : {
            ...pool,
            enqueue: (queued) =>
              new Promise((resolve) => setTimeout(resolve, enqueueDelayMs)).then(() => pool.enqueue(queued)),
          },
    router: () => router,
    outcomes: bus,
    channelPolicy: () => ({ admission: { require_mention: true, prefixes: [] }, sessionScope: 'chat' }),
  });

  // The app's server options, so that the limits under test are the ones the gateway runs with.
  const server = Fastify(
    httpServerOptions(ServerSchema.parse({ body_limit: options.bodyLimit, ...options.server })),
  ) as unknown as FastifyInstance;
  const httpShutdown = createHttpServerShutdown(server);
  await registerApiDocs(server, { title: 'Switchboard test', version: '0.0.0' });
  const statuses = createMemoryMessageStatusStore();
  const channel = createOpenApiChannel({
    config: OpenApiChannelSchema.parse({ id: 'api', type: 'openapi', ...options.channel }),
    server,
    statuses,
    events: {
      ...(options.replicaId === undefined ? {} : { replicaId: options.replicaId }),
      // As the gateway subscribes it: the final status joins the commit that ends the message.
      subscribeOutcomes: (listener) =>
        bus.subscribe((outcome, committed) => listener(outcome, 'local', committed), { stores: true }),
      subscribeTurnStarts: (listener) => {
        turnListeners.add(listener);
        return () => turnListeners.delete(listener);
      },
      subscribeRepliesStored: (listener) => {
        storedListeners.add(listener);
        return () => storedListeners.delete(listener);
      },
    },
    logger: options.logger ?? silentLogger,
    sseHeartbeatMs: options.sseHeartbeatMs,
  });
  const controller = createController({
    pool,
    pipelines: new Map(pipelineList.map(({ pipeline }) => [pipeline.id, pipeline])),
    policies: new Map(policies.map((policy) => [policy.id, policy])),
    outcomes: bus,
    outbox,
    streamReplies: (query, logger) =>
      createReplyStream({
        preview: (text, draft, signal) =>
          (channel.preview as NonNullable<ChannelAdapter['preview']>)(query.message, text, draft, signal),
        editIntervalMs: options.editIntervalMs ?? 1_000,
        finishTimeoutMs: 30_000,
        logger,
      }),
    observer: {
      turnStarted: (turn) => {
        for (const listener of turnListeners) listener(turn);
      },
      repliesStored: (delivery) => {
        for (const listener of storedListeners) listener(delivery);
      },
    },
  });
  const sender = createReplySender({
    outbox,
    channel: (id) => (id === channel.id ? channel : undefined),
    policy: () => OpenApiChannelSchema.parse({ id: 'api', type: 'openapi' }).outbound,
    outcomes: bus,
  });
  await server.ready();

  const startChannel = () => channel.start({ ingress, logger: silentLogger });
  // Sends whatever the outbox holds, also before a test starts the controller by hand.
  sender.start();
  if (options.start ?? true) {
    controller.start();
    await startChannel();
  }

  return {
    server,
    httpShutdown,
    channel,
    controller,
    pool,
    ingress,
    statuses,
    outcomes,
    startChannel,
    async close() {
      await channel.stop();
      await controller.stop({ drainTimeoutMs: 50 });
      await sender.stop({ drainTimeoutMs: 50 });
      await server.close();
    },
  };
}
