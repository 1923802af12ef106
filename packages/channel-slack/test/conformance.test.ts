import {
  type ChannelCapabilities,
  type ChannelHarness,
  type DeliveryAnswer,
  type DeliveryMode,
  type EventSpec,
  type PlatformEvent,
  type SendFailure,
  type TypingFailure,
  conformanceOutbound,
  deliveryAnswerOf,
  describeChannelConformance,
} from '@switchboard/contracts';
import { ownChannels } from '@switchboard/channel-kit';
import type { EventType, InboundMessage } from '@switchboard/core';
import { eventually } from '@switchboard/testkit/eventually';
import { inboundMessage } from '@switchboard/testkit/inbound-message';
import {
  type SlackFailure,
  eventEnvelope,
  messageChangedEvent,
  messageDeletedEvent,
  messageEvent,
  reactionEvent,
  sendEvent,
  startFakeSlack,
} from '@switchboard/testkit/slack';
import { webhookServers } from '@switchboard/testkit/webhook-server';
import { createSlackChannel } from '../src/index.js';
import { SlackChannelSchema } from '../src/options.js';

const SIGNING_SECRET = 'conformance-signing-secret';
const BOT_TOKEN = 'xoxb-conformance-bot-token';
const APP_TOKEN = 'xapp-conformance-app-token';
/** The per-channel limit of the fake and of the adapters' pacing: fast, so that 5× it takes about a second. */
const PER_CHAT = { limit: 5, perMs: 250 };
const SEND_TIMEOUT_MS = 1_000;
/** Longer than the adapter waits out itself (`maxRetryAfterMs`/`maxRateLimitWaitMs`): it goes back to the outbox. */
const RATE_LIMIT_HINT_MS = 120_000;
const EDIT_INTERVAL_MS = 200;
/**
 * How long a Socket Mode envelope's acknowledgement is waited for before it counts as withheld
 * (Slack then sends it again): a negative can only be checked within a bound.
 */
const SOCKET_ACK_WAIT_MS = 1_000;

interface SlackEvent extends PlatformEvent {
  envelope: Record<string, unknown>;
}

/** The event in a Slack envelope. */
const eventIn = (event: SlackEvent) => event.envelope.event as Record<string, unknown>;

/** A `message_changed`, `message_deleted` or `reaction_added` event about the message `original` carries. */
function slackEventOf(original: SlackEvent, type: EventType, text: string): SlackEvent {
  const message = eventIn(original);
  const event =
    type === 'edited'
      ? messageChangedEvent(message, text)
      : type === 'deleted'
        ? messageDeletedEvent(message)
        : reactionEvent(message, 'thumbsup');
  const envelope = eventEnvelope(event);
  return { key: String(envelope.event_id), spec: { ...original.spec, text }, envelope };
}

async function startSlackHarness(mode: 'events_api' | 'socket_mode'): Promise<ChannelHarness> {
  const fake = await startFakeSlack({
    botToken: BOT_TOKEN,
    appToken: APP_TOKEN,
    rateLimits: { perChannel: PER_CHAT },
  });
  let nextChat = 1_000;
  const servers = webhookServers();

  const config = SlackChannelSchema.parse({
    id: 'sl',
    type: 'slack',
    bot_token: BOT_TOKEN,
    ...(mode === 'events_api' ? { signing_secret: SIGNING_SECRET } : { app_token: APP_TOKEN }),
    api_url: fake.apiUrl,
    bot_user_id: 'UBOT',
    outbound: conformanceOutbound({
      sendTimeoutMs: SEND_TIMEOUT_MS,
      editIntervalMs: EDIT_INTERVAL_MS,
      perChat: PER_CHAT,
    }),
  });

  function malformedEnvelope(event: SlackEvent): Record<string, unknown> {
    return { ...event.envelope, event: 'not an event' };
  }

  async function deliverEvent(event: SlackEvent, deliveryMode: DeliveryMode): Promise<DeliveryAnswer> {
    const url = await servers.url('');
    let status: number;
    let headers: Headers;
    if (deliveryMode === 'unsigned') {
      const response = await fetch(`${url}/slack/sl/events`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(event.envelope),
      });
      await response.text();
      status = response.status;
      headers = response.headers;
    } else {
      const body =
        deliveryMode === 'malformed'
          ? malformedEnvelope(event)
          : deliveryMode === 'forged-malformed'
            ? '{not json'
            : event.envelope;
      const answer = await sendEvent(url, 'sl', body, {
        signingSecret: SIGNING_SECRET,
        badSignature: deliveryMode === 'forged' || deliveryMode === 'forged-malformed',
        ...(deliveryMode === 'redelivered' ? { retryNum: 1 } : {}),
      });
      status = answer.status;
      headers = answer.headers;
    }
    return deliveryAnswerOf({ status, headers });
  }

  async function deliverSocket(event: SlackEvent, deliveryMode: DeliveryMode): Promise<DeliveryAnswer> {
    const body = deliveryMode === 'malformed' ? malformedEnvelope(event) : event.envelope;
    const envelopeId = fake.sendSocketEvent(body, deliveryMode === 'redelivered' ? { retryAttempt: 1 } : {});
    const acknowledged = await eventually(() => fake.acknowledged(envelopeId), SOCKET_ACK_WAIT_MS).then(
      () => true,
      () => false,
    );
    return { acknowledged };
  }

  function failure(of: SendFailure | TypingFailure): SlackFailure {
    if (of.kind === 'hang') return { kind: 'hang' };
    if (of.kind === 'server_error') return { kind: 'http_status', status: 500 };
    if (of.kind === 'rate_limited') {
      return { kind: 'rate_limited', retryAfterSec: Math.ceil(RATE_LIMIT_HINT_MS / 1000) };
    }
    return { kind: 'platform_error', error: 'invalid_auth' };
  }

  const postsTo = (origin: InboundMessage) =>
    fake.callsTo('chat.postMessage').filter((call) => call.body.channel === origin.chat.id);

  return {
    secrets: [BOT_TOKEN, mode === 'events_api' ? SIGNING_SECRET : APP_TOKEN],
    rateLimitHintMs: RATE_LIMIT_HINT_MS,
    sendTimeoutMs: SEND_TIMEOUT_MS,
    editIntervalMs: EDIT_INTERVAL_MS,
    perChatLimit: PER_CHAT,
    createAdapter({ logger }) {
      const server = servers.next();
      return createSlackChannel({ config, server, logger });
    },
    event(spec: EventSpec): SlackEvent {
      nextChat += 1;
      const channel = `${spec.chat === 'direct' ? 'D' : 'C'}${nextChat}`;
      const mention = spec.chat === 'group' && spec.mention === true ? '<@UBOT> ' : '';
      const envelope = eventEnvelope(messageEvent({ channel, text: `${mention}${spec.text}` }));
      return { key: String(envelope.event_id), spec, envelope };
    },
    deliver: (event, deliveryMode) =>
      (mode === 'events_api' ? deliverEvent : deliverSocket)(event as SlackEvent, deliveryMode),
    origin(chat) {
      nextChat += 1;
      const id = `${chat === 'direct' ? 'D' : 'C'}${nextChat}`;
      const ts = '1718000000.000100';
      return inboundMessage({
        platform: 'slack',
        channel: 'sl',
        // A direct message in a thread of its own: an assistant thread, where typing shows.
        chat: chat === 'direct' ? { type: 'person', id, thread: ts } : { type: 'group', id },
        platform_message_id: `${id}:${ts}`,
      });
    },
    delivered: (origin) => fake.deliveredTo(origin.chat.id),
    previewCalls(origin) {
      const posts = postsTo(origin).map((call) => call.at);
      const edits = fake
        .edits()
        .filter((edit) => edit.channel === origin.chat.id)
        .map((edit) => edit.at);
      return [...posts, ...edits].sort((a, b) => a - b);
    },
    typingCalls: (origin) =>
      fake.callsTo('assistant.threads.setStatus').filter((call) => call.body.channel_id === origin.chat.id)
        .length,
    failNextTyping: (of) => fake.failNext(1, failure(of)),
    eventOf: (original, type, text) => slackEventOf(original as SlackEvent, type, text),
    failNextSend: (of) => fake.failNext(1, failure(of)),
    rateLimitViolations: () => fake.rateLimitViolations(),
    maxConsumers: () => fake.maxSocketConnections(),
    async close() {
      await servers.close();
      await fake.close();
    },
  };
}

const COMMON = {
  platformSends: true,
  groups: true,
  preview: true,
  pacing: true,
  splitLimit: 4_000,
  redelivery: true,
  // A send tried again posts the parts delivered before its failure again: a known gap.
  resendsSkipDelivered: false,
  // Only assistant threads (the harness's direct origins) show a status.
  typing: ['direct'],
  events: ['edited', 'deleted', 'reaction'],
} as const;

const EVENTS_API: ChannelCapabilities = {
  ...COMMON,
  signedInbound: true,
  connection: 'webhook',
  acknowledgement: 'ack',
};
describeChannelConformance('slack (Events API)', {
  capabilities: EVENTS_API,
  start: () => startSlackHarness('events_api'),
});

/** Socket Mode: the app token opens the connection, so events carry no signature to forge. */
const SOCKET_MODE: ChannelCapabilities = {
  ...COMMON,
  signedInbound: false,
  connection: 'single-owner',
  acknowledgement: 'ack',
};
describeChannelConformance('slack (Socket Mode)', {
  capabilities: SOCKET_MODE,
  start: () => startSlackHarness('socket_mode'),
  ownChannels,
});
