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
import { type FakeLineFailure, signLineBody, startFakeLine } from '@switchboard/testkit/line';
import { webhookServers } from '@switchboard/testkit/webhook-server';
import { createLineChannel } from '../src/index.js';
import { LineChannelSchema } from '../src/options.js';

const CHANNEL_SECRET = 'conformance-line-channel-secret';
const ACCESS_TOKEN = 'conformance-line-access-token';
const SEND_TIMEOUT_MS = 1_000;
/**
 * LINE documents no Retry-After on its 429; the fake adds one here (as a proxy may) so that the
 * check can see the hint reach `retryAfterMs`.
 */
const RATE_LIMIT_HINT_MS = 120_000;

interface LineEvent extends PlatformEvent {
  event: Record<string, unknown>;
}

async function startLineHarness(): Promise<ChannelHarness> {
  const fake = await startFakeLine({ channelSecret: CHANNEL_SECRET, channelAccessToken: ACCESS_TOKEN });
  let nextChat = 1_000;
  const servers = webhookServers();
  // Redelivery on: an event the gateway cannot take is answered so that LINE sends it again.
  const config = LineChannelSchema.parse({
    id: 'ln',
    type: 'line',
    channel_secret: CHANNEL_SECRET,
    channel_access_token: ACCESS_TOKEN,
    webhook_redelivery: true,
    api_url: fake.url,
    outbound: { send_timeout: `${SEND_TIMEOUT_MS}ms` },
  });

  function bodyOf(event: LineEvent, mode: DeliveryMode): string {
    if (mode === 'forged-malformed') return '{not json';
    const sent =
      mode === 'redelivered'
        ? fake.redelivery(event.event)
        : mode === 'malformed'
          ? { ...event.event, source: 'not a source' }
          : event.event;
    return JSON.stringify({ destination: fake.botUserId, events: [sent] });
  }

  function failure(of: SendFailure): FakeLineFailure {
    if (of.kind === 'hang') return { kind: 'hang' };
    if (of.kind === 'rate_limited') return { kind: 'rate_limited', retryAfterSec: RATE_LIMIT_HINT_MS / 1000 };
    return { kind: 'http_status', status: 401, message: 'Authentication failed.' };
  }

  return {
    secrets: [CHANNEL_SECRET, ACCESS_TOKEN],
    rateLimitHintMs: RATE_LIMIT_HINT_MS,
    sendTimeoutMs: SEND_TIMEOUT_MS,
    editIntervalMs: config.outbound.editIntervalMs,
    createAdapter({ logger }) {
      const server = servers.next();
      return createLineChannel({ config, server, logger });
    },
    event(spec: EventSpec): LineEvent {
      nextChat += 1;
      const userId = `U${String(nextChat).padStart(32, '0')}`;
      const source =
        spec.chat === 'direct'
          ? { type: 'user' as const, userId }
          : { type: 'group' as const, groupId: `C${String(nextChat).padStart(32, '0')}`, userId };
      const mention = spec.chat === 'group' && spec.mention === true;
      const event = fake.textEvent({
        text: `${mention ? '@Switchboard ' : ''}${spec.text}`,
        source,
        ...(mention ? { mentions: [{ self: true as const }] } : {}),
      });
      return { key: String(event.webhookEventId), spec, event };
    },
    async deliver(event, mode) {
      const raw = bodyOf(event as LineEvent, mode);
      const forged = mode === 'forged' || mode === 'forged-malformed';
      const signature =
        mode === 'unsigned' ? null : signLineBody(forged ? 'not-the-secret' : CHANNEL_SECRET, raw);
      const answer = await fake.deliverWebhook(await servers.url('/line/ln'), raw, { signature });
      return deliveryAnswerOf(answer);
    },
    origin(chat) {
      nextChat += 1;
      const id = `${chat === 'direct' ? 'U' : 'C'}${String(nextChat).padStart(32, '0')}`;
      return inboundMessage({
        platform: 'line',
        channel: 'ln',
        chat: { type: chat === 'direct' ? 'person' : 'group', id },
        platform_message_id: String(nextChat),
      });
    },
    delivered: (origin) => fake.deliveredTo(origin.chat.id),
    // A message this process received no reply token for is answered by push.
    failNextSend: (of, options) => fake.failNext('push', 1, failure(of), options),
    async close() {
      await servers.close();
      await fake.close();
    },
  };
}

const LINE: ChannelCapabilities = {
  signedInbound: true,
  redelivery: true,
  groups: true,
  platformSends: true,
  // LINE cannot edit a sent message; it allows 2,000 sending calls a second.
  preview: false,
  pacing: false,
  connection: 'webhook',
  splitLimit: 5_000,
  resendsSkipDelivered: true,
  acknowledgement: 'ack',
  typing: [],
  events: [],
};

describeChannelConformance('line', { capabilities: LINE, start: startLineHarness });
