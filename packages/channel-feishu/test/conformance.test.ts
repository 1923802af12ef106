import {
  type ChannelCapabilities,
  type ChannelHarness,
  type DeliveryMode,
  type EventSpec,
  type PlatformEvent,
  type SendFailure,
  conformanceOutbound,
  describeChannelConformance,
} from '@switchboard/contracts';
import type { ChannelAdapter } from '@switchboard/core';
import { eventually } from '@switchboard/testkit/eventually';
import { type FakeFeishuFailure, startFakeFeishu } from '@switchboard/testkit/feishu';
import { inboundMessage } from '@switchboard/testkit/inbound-message';
import { webhookServers } from '@switchboard/testkit/webhook-server';
import { createFeishuChannel } from '../src/index.js';
import { FeishuChannelSchema } from '../src/options.js';

const APP_SECRET = 'conformance-feishu-app-secret';
const ENCRYPT_KEY = 'conformance-feishu-encrypt-key';
const VERIFICATION_TOKEN = 'conformance-feishu-verification-token';
/** The per-chat limit of the fake and of the adapters' pacing: fast, so that 5× it takes about a second. */
const PER_CHAT = { limit: 5, perMs: 250 };
const SEND_TIMEOUT_MS = 1_000;
const EDIT_INTERVAL_MS = 200;
/** Longer than the outbox would wait: the adapter gives the limit back as `retryAfterMs`. */
const RATE_LIMIT_HINT_MS = 120_000;

interface FeishuEvent extends PlatformEvent {
  body: Record<string, unknown>;
}

/** How events reach the adapters of a harness: Feishu's two modes. */
type Mode = 'webhook' | 'websocket';

/** A long-connection delivery waits this long for its answer: beyond the checks' held ingress. */
const SOCKET_ACK_TIMEOUT_MS = 5_000;

async function startFeishuHarness(mode: Mode): Promise<ChannelHarness> {
  const fake = await startFakeFeishu({
    appSecret: APP_SECRET,
    encryptKey: ENCRYPT_KEY,
    verificationToken: VERIFICATION_TOKEN,
    rateLimits: { perChat: PER_CHAT },
  });
  let nextChat = 1_000;
  const servers = webhookServers();
  let latest: ChannelAdapter | undefined;
  const config = FeishuChannelSchema.parse({
    id: 'fs',
    type: 'feishu',
    mode,
    app_id: fake.appId,
    app_secret: APP_SECRET,
    domain: fake.url,
    encrypt_key: ENCRYPT_KEY,
    verification_token: VERIFICATION_TOKEN,
    outbound: conformanceOutbound({
      sendTimeoutMs: SEND_TIMEOUT_MS,
      editIntervalMs: EDIT_INTERVAL_MS,
      perChat: PER_CHAT,
    }),
  });

  function chatIdOf(chat: 'direct' | 'group'): string {
    nextChat += 1;
    return `oc_${chat === 'direct' ? 'p2p' : 'group'}_${nextChat}`;
  }

  function failure(of: SendFailure): FakeFeishuFailure {
    if (of.kind === 'hang') return { kind: 'hang' };
    if (of.kind === 'rate_limited') return { kind: 'rate_limited', resetSeconds: RATE_LIMIT_HINT_MS / 1000 };
    return { kind: 'auth' };
  }

  return {
    // Read once the sends are done: the tenant tokens the fake issued by then are secrets too.
    get secrets() {
      return [APP_SECRET, ENCRYPT_KEY, VERIFICATION_TOKEN, ...fake.issuedTokens()];
    },
    rateLimitHintMs: RATE_LIMIT_HINT_MS,
    sendTimeoutMs: SEND_TIMEOUT_MS,
    editIntervalMs: EDIT_INTERVAL_MS,
    perChatLimit: PER_CHAT,
    createAdapter: ({ logger }) => {
      latest = createFeishuChannel({ config, server: servers.next(), logger });
      return latest;
    },
    event(spec: EventSpec): FeishuEvent {
      const body = fake.messageEvent({
        text: spec.text,
        chatType: spec.chat === 'direct' ? 'p2p' : 'group',
        chatId: chatIdOf(spec.chat),
        senderOpenId: `ou_user${nextChat}`,
        mentionBot: spec.chat === 'group' && spec.mention === true,
      });
      return { key: String(body.header.event_id), spec, body };
    },
    async deliver(event, delivery: DeliveryMode) {
      const { body } = event as FeishuEvent;
      if (mode === 'websocket') {
        // Only the running adapter's connection is open: the last check's is closed.
        await eventually(
          () => latest?.health().ready === true && fake.longConnection.connections() === 1,
          5_000,
          'the adapter connected',
        );
        // Nothing to sign or forge: the connection itself is the app's. One try: the suite redelivers.
        const sent = delivery === 'malformed' ? { ...body, event: { message: 'not a message' } } : body;
        const answer = await fake.longConnection.deliver(sent, {
          maxAttempts: 1,
          ackTimeoutMs: SOCKET_ACK_TIMEOUT_MS,
        });
        return { acknowledged: answer.code === 200 };
      }
      // Feishu sends an event again as it was, same event_id: `redelivered` is `signed` once more.
      const answer =
        delivery === 'forged-malformed'
          ? await fake.deliverEvent(await servers.url('/feishu/fs'), '{not json', {
              signature: 'f'.repeat(64),
              plain: true,
            })
          : await fake.deliverEvent(
              await servers.url('/feishu/fs'),
              delivery === 'malformed' ? { ...body, event: { message: 'not a message' } } : body,
              delivery === 'forged'
                ? { signature: 'f'.repeat(64) }
                : delivery === 'unsigned'
                  ? { signature: null }
                  : {},
            );
      return {
        status: answer.status,
        acknowledged: answer.status >= 200 && answer.status < 300,
        ...(answer.retryAfter === undefined ? {} : { retryAfter: answer.retryAfter }),
      };
    },
    origin(chat) {
      const chatId = chatIdOf(chat);
      // A message the fake knows, so that replying to it lands in its chat.
      const said = fake.messageEvent({
        text: 'origin',
        chatType: chat === 'direct' ? 'p2p' : 'group',
        chatId,
      });
      return inboundMessage({
        platform: 'feishu',
        channel: 'fs',
        chat: { type: chat === 'direct' ? 'person' : 'group', id: chatId },
        platform_message_id: said.event.message.message_id,
      });
    },
    delivered: (origin) => fake.shownIn(origin.chat.id),
    previewCalls: (origin) =>
      fake.calls
        .filter((call) => call.chatId === origin.chat.id && call.status === 200)
        .map((call) => call.at),
    // A refused token is fetched anew and the call made once more: refused twice, it fails.
    failNextSend: (of) => fake.failNext('reply', of.kind === 'auth' ? 2 : 1, failure(of)),
    rateLimitViolations: () => fake.rateLimitViolations(),
    async close() {
      await servers.close();
      await fake.close();
    },
  };
}

const FEISHU: ChannelCapabilities = {
  // X-Lark-Signature with the encrypt key.
  signedInbound: true,
  // Feishu sends an event again (same event_id) when it got no 200 in time.
  redelivery: true,
  groups: true,
  platformSends: true,
  // Streamed answers edit the bot's text message.
  preview: true,
  pacing: true,
  connection: 'webhook',
  splitLimit: 30_000,
  // Replies carry a uuid Feishu takes once, but the fake cannot yet let a reply through and fail
  // the next one (its failNext has no `after`), so the check cannot be driven here.
  resendsSkipDelivered: false,
  acknowledgement: 'ack',
  typing: [],
  events: [],
};

describeChannelConformance('feishu', { capabilities: FEISHU, start: () => startFeishuHarness('webhook') });

const FEISHU_WEBSOCKET: ChannelCapabilities = {
  ...FEISHU,
  // Events come over the connection the app's credentials opened: nothing per event to check.
  signedInbound: false,
  // Feishu sends each event to one of the app's connections: every replica connects.
  connection: 'webhook',
};

describeChannelConformance('feishu websocket', {
  capabilities: FEISHU_WEBSOCKET,
  start: () => startFeishuHarness('websocket'),
});
