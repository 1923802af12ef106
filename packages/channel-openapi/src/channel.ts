import {
  type ChannelAdapter,
  type Ingress,
  type Logger,
  type MessageStatusStore,
  type SessionReplies,
  traceIdOf,
} from '@switchboard/core';
import type { FastifyInstance } from 'fastify';
import type { ChannelEvents } from './channel-events.js';
import type { OpenApiChannelConfig } from './options.js';
import { channelRoutes } from './routes.js';
import { type ReplyEvent, createSseHub } from './sse.js';
import { createStatusTracker } from './status-tracker.js';

/** Options of `createOpenApiChannel`. */
export interface OpenApiChannelOptions {
  /** The parsed `channels[]` entry of `type: openapi`. */
  config: OpenApiChannelConfig;
  /**
   * The app's HTTP server. The channel adds its routes under `config.prefix` at once; the app
   * calls `registerApiDocs` before, and `server.ready()` / `listen()` after.
   */
  server: FastifyInstance;
  /** Where message statuses, replies and idempotency keys are kept. */
  statuses: MessageStatusStore;
  /** Outcomes and turn starts of the engine, to keep statuses current and answer waiting requests. */
  events: ChannelEvents;
  logger: Logger;
  /** Interval of the comment lines that keep idle event streams open. Default: 15 s. */
  sseHeartbeatMs?: number;
  /** Clock, ms since the epoch. Default: `Date.now`. */
  now?: () => number;
}

function replyEventsOf({ messageId, turn, replies }: SessionReplies): ReplyEvent[] {
  return replies.map((reply) => ({ message_id: messageId, turn, ...reply }));
}

const DEFAULTS = {
  sseHeartbeatMs: 15_000,
  now: Date.now,
} satisfies Partial<OpenApiChannelOptions>;

/**
 * The HTTP API channel (docs/design.md §3 "openapi"): `POST {prefix}/messages`, `GET {prefix}/messages/{id}`
 * and `GET {prefix}/sessions/{session_id}/events`. Its routes exist from creation but answer
 * 503 SB_DRAINING until `start` and again after `stop`; from `drain` on, requests waiting for
 * replies are answered 202 at once, so none holds the server open through a shutdown. Its outbox (`send`) records the replies
 * on the message's status and pushes them to the session's event streams; a streamed answer's
 * previews reach those streams first as `reply.delta` events (the streams of this replica only). Statuses follow the
 * engine's events for the life of the server, so messages accepted before `stop` still end in
 * their final status while the engine drains.
 */
export function createOpenApiChannel(options: OpenApiChannelOptions): ChannelAdapter {
  const { config, server, statuses, events } = options;
  const now = options.now ?? DEFAULTS.now;
  const logger = options.logger.child({ component: 'channel.openapi', channel: config.id });
  const tracker = createStatusTracker({ channelId: config.id, statuses, events, logger, now });
  const { followSession, shareReplies } = events;
  const sse = createSseHub({
    heartbeatMs: options.sseHeartbeatMs ?? DEFAULTS.sseHeartbeatMs,
    logger,
    ...(followSession === undefined
      ? {}
      : {
          follow: (sessionId, publish) =>
            followSession(config.id, sessionId, (replies) => publish(replyEventsOf(replies))),
        }),
    limits: {
      maxStreams: config.maxEventStreams,
      maxStreamsPerSession: config.maxEventStreamsPerSession,
      maxBufferedBytes: config.maxEventStreamBufferBytes,
      maxBufferedBytesTotal: config.maxEventStreamBufferTotalBytes,
    },
  });
  let ingress: Ingress | null = null;

  void server.register(
    channelRoutes({
      config,
      statuses,
      tracker,
      sse,
      ingress: () => ingress,
      replicaId: events.replicaId,
      now,
    }),
    { prefix: config.prefix },
  );
  server.addHook('onClose', async () => tracker.close());

  return {
    id: config.id,
    type: 'openapi',
    // A send changes the status in memory and tells the event streams: given the commit that
    // stores it, only once that committed (docs/design.md §2 "Durability").
    localSend: true,

    async start(context) {
      // Answer for messages accepted before a restart as for any other: an `Idempotency-Key`
      // retry finds its message instead of accepting it a second time.
      await Promise.all(
        (context.recovered ?? []).map(({ message, pipeline, rule }) =>
          tracker.recovered(message.id, {
            pipeline,
            rule: rule ?? null,
            traceId: traceIdOf(message.traceparent),
            tenant: message.tenant,
            generation: message.generation ?? 0,
          }),
        ),
      );
      ingress = context.ingress;
      logger.info({ prefix: config.prefix, apiKeys: config.apiKeys.length }, 'channel started');
    },

    drain() {
      tracker.drain();
    },

    async stop() {
      ingress = null;
      logger.info({}, 'channel stopped');
    },

    async send(origin, replies, signal, sendOptions) {
      // Local writes that do not hang; a send whose deadline already passed does not start.
      signal.throwIfAborted();
      const deliver = async () => {
        // A replayed dead letter's answer names no turn: the stored status does, for the events.
        const answer = sendOptions?.answer === true && sendOptions.turn !== undefined;
        const status = await tracker.appendReplies(origin.id, replies, answer);
        const sent = {
          channel: config.id,
          session: origin.chat.id,
          messageId: origin.id,
          // The sender's replica may not know the message yet: the delivery names its turn.
          turn: sendOptions?.turn ?? status?.turn ?? null,
          replies,
        };
        sse.publish(sent.session, replyEventsOf(sent));
        shareReplies?.(sent);
      };
      const { committed } = sendOptions ?? {};
      if (committed === undefined) return deliver();
      // Sent before its delivery is stored (`localSend`): nothing changes until it is. The final
      // status carries the answer from its outcome; what this appends to it finds it there.
      void committed
        .then((stored) => (stored ? deliver() : undefined))
        .catch((err: unknown) => logger.error({ err, messageId: origin.id }, 'status update failed'));
    },

    // The ref is how much of the answer the session's streams have: each delta is what came since.
    async preview(origin, text, draft, signal) {
      signal.throwIfAborted();
      const status = await tracker.current(origin.id);
      const delta = text.slice(draft === undefined ? 0 : Number(draft));
      if (delta !== '') {
        sse.publishDelta(origin.chat.id, { message_id: origin.id, turn: status?.turn ?? null, delta });
      }
      return String(text.length);
    },

    health() {
      return ingress === null
        ? { ready: false, detail: 'not running (before start or after stop)' }
        : { ready: true };
    },
  };
}
