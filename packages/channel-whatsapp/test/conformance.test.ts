import {
  type ChannelCapabilities,
  type ChannelHarness,
  type DeliveryMode,
  type EventSpec,
  type PlatformEvent,
  type SendFailure,
  deliveryAnswerOf,
  describeChannelConformance,
} from '@switchboard/contracts';
import { inboundMessage } from '@switchboard/testkit/inbound-message';
import { type FakeWhatsAppFailure, signWhatsAppBody, startFakeWhatsApp } from '@switchboard/testkit/whatsapp';
import { webhookServers } from '@switchboard/testkit/webhook-server';
import { createWhatsAppChannel } from '../src/index.js';
import { WhatsAppChannelSchema } from '../src/options.js';

/** The pair rate of the fake and of the adapters' pacing: fast, so that 5× it takes about a second. */
const PER_CHAT = { limit: 5, perMs: 250 };
const SEND_TIMEOUT_MS = 1_000;
/** The Retry-After of the fake's rate-limit answer: the adapter gives it back to the outbox. */
const RATE_LIMIT_HINT_MS = 120_000;

interface WhatsAppEvent extends PlatformEvent {
  notification: Record<string, unknown>;
}

async function startWhatsAppHarness(): Promise<ChannelHarness> {
  const fake = await startFakeWhatsApp({
    accessToken: 'conformance-whatsapp-access-token',
    appSecret: 'conformance-whatsapp-app-secret',
    verifyToken: 'conformance-whatsapp-verify-token',
    rateLimits: { perRecipient: PER_CHAT },
  });
  let nextUser = 4_915_100_000_000;
  const servers = webhookServers();
  const config = WhatsAppChannelSchema.parse({
    id: 'wa',
    type: 'whatsapp',
    phone_number_id: fake.phoneNumberId,
    access_token: fake.accessToken,
    app_secret: fake.appSecret,
    verify_token: fake.verifyToken,
    api_url: fake.url,
    outbound: {
      send_timeout: `${SEND_TIMEOUT_MS}ms`,
      rate: {
        enabled: true,
        per_bot: null,
        per_chat: { limit: PER_CHAT.limit, per: `${PER_CHAT.perMs}ms` },
        per_group: null,
      },
    },
  });

  function bodyOf(event: WhatsAppEvent, mode: DeliveryMode): string {
    if (mode === 'forged-malformed') return '{not json';
    if (mode === 'malformed') return JSON.stringify({ ...event.notification, entry: 'not a list' });
    return JSON.stringify(event.notification);
  }

  function failure(of: SendFailure): FakeWhatsAppFailure {
    if (of.kind === 'rate_limited') return { kind: 'rate_limited', retryAfterSec: RATE_LIMIT_HINT_MS / 1000 };
    return of;
  }

  return {
    secrets: [fake.accessToken, fake.appSecret, fake.verifyToken],
    rateLimitHintMs: RATE_LIMIT_HINT_MS,
    sendTimeoutMs: SEND_TIMEOUT_MS,
    editIntervalMs: 1_000,
    perChatLimit: PER_CHAT,
    createAdapter({ logger }) {
      const server = servers.next();
      return createWhatsAppChannel({ config, server, logger });
    },
    event(spec: EventSpec): WhatsAppEvent {
      nextUser += 1;
      const value = fake.textMessage({ text: spec.text, from: String(nextUser) });
      const key = String(value.messages?.[0]?.id);
      return { key, spec, notification: fake.notification(value) };
    },
    async deliver(event, mode) {
      const url = await servers.url('/whatsapp/wa');
      const raw = bodyOf(event as WhatsAppEvent, mode);
      const signature =
        mode === 'unsigned'
          ? null
          : signWhatsAppBody(
              mode === 'forged' || mode === 'forged-malformed' ? 'not-the-app-secret' : fake.appSecret,
              raw,
            );
      return deliveryAnswerOf(await fake.deliverWebhook(url, raw, { signature }));
    },
    origin() {
      nextUser += 1;
      const id = String(nextUser);
      return inboundMessage({
        platform: 'whatsapp',
        channel: 'wa',
        chat: { type: 'person', id },
        sender: { id },
        platform_message_id: `wamid.${id}`,
      });
    },
    delivered: (origin) => fake.deliveredTo(origin.chat.id),
    failNextSend: (of, options) => fake.failNext(1, failure(of), options),
    rateLimitViolations: () => fake.rateLimitViolations(),
    async close() {
      await servers.close();
      await fake.close();
    },
  };
}

/** Cloud API chats are one-to-one, and WhatsApp messages cannot be edited (no previews). */
const CAPABILITIES: ChannelCapabilities = {
  signedInbound: true,
  redelivery: true,
  groups: false,
  platformSends: true,
  preview: false,
  pacing: true,
  connection: 'webhook',
  splitLimit: 4_096,
  resendsSkipDelivered: true,
  acknowledgement: 'ack',
  typing: [],
  events: [],
};

describeChannelConformance('whatsapp', { capabilities: CAPABILITIES, start: startWhatsAppHarness });
