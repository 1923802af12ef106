import {
  type ChannelCapabilities,
  type ChannelHarness,
  type DeliveryMode,
  type EventSpec,
  type PlatformEvent,
  deliveryAnswerOf,
  describeChannelConformance,
} from '@switchboard/contracts';
import { createMemoryMessageStatusStore } from '@switchboard/core';
import { ServerSchema, httpServerOptions, registerApiDocs } from '@switchboard/http';
import Fastify, { type FastifyInstance } from 'fastify';
import { createOpenApiChannel } from '../src/index.js';
import { OpenApiChannelSchema } from '../src/options.js';

const API_KEY = 'conformance-api-key-0123456789';

interface ApiEvent extends PlatformEvent {
  body: Record<string, unknown>;
}

/** The HTTP channel's replies are local writes: there is no platform to hang, refuse a token or rate-limit. */
function noPlatform(): never {
  throw new Error('the HTTP channel sends to no platform');
}

async function startOpenApiHarness(): Promise<ChannelHarness> {
  let server: FastifyInstance | undefined;
  let listening: Promise<string> | undefined;
  let nextSession = 0;
  const config = OpenApiChannelSchema.parse({ id: 'api', type: 'openapi', api_keys: [API_KEY] });

  function apiUrl(): Promise<string> {
    if (server === undefined) throw new Error('no adapter created');
    const current = server;
    listening ??= current.listen({ port: 0, host: '127.0.0.1' });
    return listening;
  }

  const authorization: Record<DeliveryMode, string | undefined> = {
    signed: `Bearer ${API_KEY}`,
    redelivered: `Bearer ${API_KEY}`,
    malformed: `Bearer ${API_KEY}`,
    forged: 'Bearer not-the-api-key',
    'forged-malformed': 'Bearer not-the-api-key',
    unsigned: undefined,
  };

  return {
    secrets: [API_KEY],
    rateLimitHintMs: 0,
    sendTimeoutMs: config.outbound.sendTimeoutMs,
    editIntervalMs: config.outbound.editIntervalMs,
    createAdapter({ logger }) {
      void server?.close();
      // The app's server options and error answers, as the gateway serves the API.
      server = Fastify(httpServerOptions(ServerSchema.parse({}))) as unknown as FastifyInstance;
      listening = undefined;
      const current = server;
      const adapter = createOpenApiChannel({
        config,
        server: current,
        statuses: createMemoryMessageStatusStore(),
        events: { subscribeOutcomes: () => () => {}, subscribeTurnStarts: () => () => {} },
        logger,
      });
      void registerApiDocs(current, { title: 'conformance', version: '0.0.0' });
      return adapter;
    },
    event(spec: EventSpec): ApiEvent {
      nextSession += 1;
      const body = {
        session_id: `session-${nextSession}`,
        user_id: 'alice',
        text: spec.text,
        chat_type: spec.chat === 'direct' ? 'person' : 'group',
        wait: false,
      };
      return { key: `key-${nextSession}-${spec.text.replaceAll(' ', '-')}`, spec, body };
    },
    async deliver(event, deliveryMode) {
      const { key, body } = event as ApiEvent;
      const header = authorization[deliveryMode];
      const payload =
        deliveryMode === 'malformed'
          ? JSON.stringify({ ...body, session_id: 42 })
          : deliveryMode === 'forged-malformed'
            ? '{not json'
            : JSON.stringify(body);
      const response = await fetch(`${await apiUrl()}/v1/messages`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'idempotency-key': key,
          ...(header === undefined ? {} : { authorization: header }),
        },
        body: payload,
      });
      await response.text();
      return deliveryAnswerOf(response);
    },
    origin: noPlatform,
    delivered: noPlatform,
    failNextSend: noPlatform,
    async close() {
      await server?.close();
    },
  };
}

/**
 * The HTTP API: requests carry a bearer key, a retry with the same Idempotency-Key is the
 * redelivery, and the answer waits for the ingress. A caller always addresses the bot, so there is
 * no mention to gate in a group (`mentions_bot` is always true); replies go to statuses and
 * event streams, not to a platform.
 */
const OPENAPI: ChannelCapabilities = {
  signedInbound: true,
  redelivery: true,
  groups: false,
  platformSends: false,
  preview: false,
  pacing: false,
  connection: 'webhook',
  resendsSkipDelivered: false,
  acknowledgement: 'ack',
  typing: [],
  events: [],
};
describeChannelConformance('openapi', { capabilities: OPENAPI, start: startOpenApiHarness });
