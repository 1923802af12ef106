import {
  type ChannelCapabilities,
  type ChannelHarness,
  type DeliveryMode,
  type EventSpec,
  type PlatformEvent,
  type SendFailure,
  describeChannelConformance,
} from '@switchboard/contracts';
import { isSwitchboardError } from '@switchboard/core';
import { inboundMessage } from '@switchboard/testkit/inbound-message';
import { type TeamsFailure, messageActivity, startFakeTeams } from '@switchboard/testkit/teams';
import Fastify, { type FastifyInstance } from 'fastify';
import { MAX_TEXT_CHARS, activityRefKey, createTeamsChannel } from '../src/index.js';
import { TeamsChannelSchema } from '../src/options.js';

const APP_PASSWORD = 'conformance-teams-app-password';
/** The per-conversation limit of the fake and of the adapters' pacing: fast, so that 5× it takes about a second. */
const PER_CHAT = { limit: 5, perMs: 250 };
const SEND_TIMEOUT_MS = 1_000;
/** The adapter never waits a 429 out itself: the hint goes back to the outbox. */
const RATE_LIMIT_HINT_MS = 120_000;
const EDIT_INTERVAL_MS = 200;

interface TeamsEvent extends PlatformEvent {
  activity: ReturnType<typeof messageActivity>;
}

/** The app's error answer: a SwitchboardError's status and code. */
function withErrorAnswers(server: FastifyInstance): FastifyInstance {
  server.setErrorHandler((error: Error & { code?: string; statusCode?: number }, _request, reply) => {
    const status = isSwitchboardError(error) ? (error.status ?? 500) : (error.statusCode ?? 500);
    void reply.code(status).send({ error: { code: error.code, message: error.message } });
  });
  return server;
}

async function startTeamsHarness(): Promise<ChannelHarness> {
  const fake = await startFakeTeams({ appPassword: APP_PASSWORD, perConversation: PER_CHAT });
  let nextChat = 1_000;
  let server: FastifyInstance | undefined;
  let listening: Promise<string> | undefined;
  const config = TeamsChannelSchema.parse({
    id: 'ms',
    type: 'teams',
    app_id: fake.appId,
    app_password: APP_PASSWORD,
    openid_metadata_url: fake.openIdMetadataUrl,
    token_url: fake.tokenUrl,
    outbound: {
      send_timeout: `${SEND_TIMEOUT_MS}ms`,
      edit_interval: `${EDIT_INTERVAL_MS}ms`,
      rate: {
        enabled: true,
        per_bot: null,
        per_chat: { limit: PER_CHAT.limit, per: `${PER_CHAT.perMs}ms` },
        per_group: null,
      },
    },
  });

  function gatewayUrl(): Promise<string> {
    if (server === undefined) throw new Error('no adapter created');
    const current = server;
    listening ??= current.listen({ port: 0, host: '127.0.0.1' });
    return listening;
  }

  function failure(of: SendFailure): TeamsFailure {
    if (of.kind === 'hang') return { kind: 'hang' };
    if (of.kind === 'rate_limited') return { kind: 'rate_limited', retryAfterSec: RATE_LIMIT_HINT_MS / 1000 };
    return { kind: 'http_status', status: 401 };
  }

  async function deliver(event: TeamsEvent, mode: DeliveryMode) {
    const body =
      mode === 'malformed'
        ? { ...event.activity, from: 'nobody' }
        : mode === 'forged-malformed'
          ? '{not json'
          : event.activity;
    const signature = mode === 'unsigned' ? 'none' : mode.startsWith('forged') ? 'forged' : 'valid';
    const answer = await fake.post(await gatewayUrl(), '/teams/ms/messages', body, { signature });
    const retryAfter = answer.headers.get('retry-after');
    return {
      status: answer.status,
      acknowledged: answer.status >= 200 && answer.status < 300,
      ...(retryAfter === null ? {} : { retryAfter }),
    };
  }

  return {
    secrets: [APP_PASSWORD],
    rateLimitHintMs: RATE_LIMIT_HINT_MS,
    sendTimeoutMs: SEND_TIMEOUT_MS,
    editIntervalMs: EDIT_INTERVAL_MS,
    perChatLimit: PER_CHAT,
    createAdapter({ logger }) {
      void server?.close();
      server = withErrorAnswers(Fastify());
      listening = undefined;
      return createTeamsChannel({ config, server, logger });
    },
    event(spec: EventSpec): TeamsEvent {
      nextChat += 1;
      const activity = messageActivity(fake, {
        conversationType: spec.chat === 'direct' ? 'personal' : 'groupChat',
        conversationId: `${spec.chat === 'direct' ? 'a:' : '19:'}${nextChat}`,
        text: spec.text,
        mentionBot: spec.chat === 'group' && spec.mention === true,
      });
      return { key: activity.id, spec, activity };
    },
    deliver: (event, mode) => deliver(event as TeamsEvent, mode),
    origin(chat) {
      nextChat += 1;
      const activity = messageActivity(fake, {
        conversationType: chat === 'direct' ? 'personal' : 'groupChat',
        conversationId: `${chat === 'direct' ? 'a:' : '19:'}${nextChat}`,
        text: 'hello',
      });
      return inboundMessage({
        platform: 'teams',
        channel: 'ms',
        chat: { type: chat === 'direct' ? 'person' : 'group', id: activity.conversation.id },
        platform_message_id: activityRefKey({
          serviceUrl: activity.serviceUrl,
          conversationId: activity.conversation.id,
          activityId: activity.id,
        }),
      });
    },
    delivered: (origin) => fake.deliveredTo(origin.chat.id),
    previewCalls(origin) {
      return fake.calls
        .filter((call) => call.conversationId === origin.chat.id)
        .map((call) => call.at)
        .sort((a, b) => a - b);
    },
    failNextSend: (of, options) => fake.failNext(1, failure(of), options),
    rateLimitViolations: () => fake.rateLimitViolations(),
    async close() {
      await server?.close();
      await fake.close();
    },
  };
}

const CAPABILITIES: ChannelCapabilities = {
  signedInbound: true,
  redelivery: true,
  groups: true,
  platformSends: true,
  preview: true,
  pacing: true,
  connection: 'webhook',
  splitLimit: MAX_TEXT_CHARS,
  resendsSkipDelivered: true,
  acknowledgement: 'ack',
  typing: [],
  events: [],
};

describeChannelConformance('teams', { capabilities: CAPABILITIES, start: startTeamsHarness });
