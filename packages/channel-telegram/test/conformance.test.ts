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
import { type FakeTelegramFailure, startFakeTelegram } from '@switchboard/testkit/telegram';
import { webhookServers } from '@switchboard/testkit/webhook-server';
import { createTelegramChannel } from '../src/index.js';
import { TelegramChannelSchema } from '../src/options.js';

const WEBHOOK_SECRET = 'conformance-webhook-secret';
const TOKEN = '424242:conformance-telegram-token';
/** The per-chat limit of the fake and of the adapters' pacing: fast, so that 5× it takes about a second. */
const PER_CHAT = { limit: 5, perMs: 250 };
const SEND_TIMEOUT_MS = 1_000;
/** Longer than the adapter waits out itself (`maxRetryAfterMs`/`maxRateLimitWaitMs`): it goes back to the outbox. */
const RATE_LIMIT_HINT_MS = 120_000;
const EDIT_INTERVAL_MS = 200;

// biome-ignore lint/suspicious/noExplicitAny: Bot API payloads are built freely
type Json = Record<string, any>;

interface TelegramEvent extends PlatformEvent {
  update: Json;
}

async function startTelegramHarness(mode: 'webhook' | 'polling'): Promise<ChannelHarness> {
  const fake = await startFakeTelegram({ token: TOKEN, rateLimits: { perChat: PER_CHAT } });
  const username = fake.botUser.username ?? '';
  let nextChat = 1_000;
  let nextUpdate = 5_000;
  const servers = webhookServers();

  const config = TelegramChannelSchema.parse({
    id: 'tg',
    type: 'telegram',
    token: TOKEN,
    api_root: fake.url,
    mode,
    ...(mode === 'webhook' ? { webhook: { secret_token: WEBHOOK_SECRET } } : {}),
    outbound: conformanceOutbound({
      sendTimeoutMs: SEND_TIMEOUT_MS,
      editIntervalMs: EDIT_INTERVAL_MS,
      perChat: PER_CHAT,
    }),
  });

  async function deliverWebhook(event: TelegramEvent, deliveryMode: DeliveryMode): Promise<DeliveryAnswer> {
    const url = await servers.url('/telegram/tg');
    const secret = {
      signed: WEBHOOK_SECRET,
      redelivered: WEBHOOK_SECRET,
      malformed: WEBHOOK_SECRET,
      forged: 'forged-secret',
      'forged-malformed': 'forged-secret',
      unsigned: undefined,
    }[deliveryMode];
    const body =
      deliveryMode === 'malformed'
        ? JSON.stringify({ update_id: event.update.update_id, message: 'not a message' })
        : deliveryMode === 'forged-malformed'
          ? '{not json'
          : event.update;
    return deliveryAnswerOf(await fake.deliverWebhook(url, body, secret));
  }

  /** Queues the update for getUpdates; resolves once it is confirmed, or fetched again (not acknowledged). */
  async function deliverPolled(event: TelegramEvent, deliveryMode: DeliveryMode): Promise<DeliveryAnswer> {
    const id = event.update.update_id as number;
    const fetchedBefore = fake.fetchCounts().get(id) ?? 0;
    if (deliveryMode === 'malformed') fake.pushUpdate({ update_id: id, message: 'not a message' });
    else if (
      fake.confirmedOffset() <= id &&
      fake.pendingUpdates().some((update) => update.update_id === id)
    ) {
      // Still unconfirmed: Telegram hands it out again at the next getUpdates.
    } else fake.pushUpdate(event.update);
    return eventually(
      () => {
        if (fake.confirmedOffset() > id) return { acknowledged: true };
        if ((fake.fetchCounts().get(id) ?? 0) >= fetchedBefore + 2) return { acknowledged: false };
        return undefined;
      },
      5_000,
      `update ${id} confirmed or fetched again`,
    );
  }

  function failure(of: SendFailure | TypingFailure): FakeTelegramFailure {
    if (of.kind === 'hang') return { hang: true };
    if (of.kind === 'rate_limited') return { status: 429, retryAfterS: Math.ceil(RATE_LIMIT_HINT_MS / 1000) };
    if (of.kind === 'server_error') return { status: 500 };
    return { status: 401 };
  }

  /** An edited_message or message_reaction update about the message `original` carries. */
  function eventOf(original: TelegramEvent, type: EventType, text: string): TelegramEvent {
    const message = original.update.message as Json;
    const date = Math.floor(Date.now() / 1000);
    nextUpdate += 1;
    const update =
      type === 'edited'
        ? { update_id: nextUpdate, edited_message: { ...message, text, entities: [], edit_date: date } }
        : {
            update_id: nextUpdate,
            message_reaction: {
              chat: message.chat,
              message_id: message.message_id,
              user: message.from,
              date,
              old_reaction: [],
              new_reaction: [{ type: 'emoji', emoji: '👍' }],
            },
          };
    return { key: String(nextUpdate), spec: { ...original.spec, text }, update };
  }

  const chatIdOf = (origin: InboundMessage) => Number(origin.chat.id);

  return {
    secrets: [TOKEN, WEBHOOK_SECRET],
    rateLimitHintMs: RATE_LIMIT_HINT_MS,
    sendTimeoutMs: SEND_TIMEOUT_MS,
    editIntervalMs: EDIT_INTERVAL_MS,
    perChatLimit: PER_CHAT,
    createAdapter({ logger }) {
      const server = servers.next();
      return createTelegramChannel({
        config,
        server,
        logger,
        pollTimeoutMs: 1_000,
        pollRetry: { baseDelayMs: 50, maxDelayMs: 200 },
      });
    },
    event(spec: EventSpec): TelegramEvent {
      nextChat += 1;
      const chat =
        spec.chat === 'direct'
          ? { id: nextChat, first_name: 'Alice', type: 'private' }
          : { id: -nextChat, title: 'Tea party', type: 'group' };
      const mention = spec.chat === 'group' && spec.mention === true ? `@${username} ` : '';
      const text = `${mention}${spec.text}`;
      const message = fake.message({
        from: { id: 111_222_333, is_bot: false, first_name: 'Alice' },
        chat,
        text,
        ...(mention === ''
          ? {}
          : { entities: [{ offset: 0, length: username.length + 1, type: 'mention' }] }),
      });
      nextUpdate += 1;
      return { key: String(nextUpdate), spec, update: { update_id: nextUpdate, message } };
    },
    deliver: (event, deliveryMode) =>
      (mode === 'webhook' ? deliverWebhook : deliverPolled)(event as TelegramEvent, deliveryMode),
    origin(chat) {
      nextChat += 1;
      const id = chat === 'direct' ? nextChat : -nextChat;
      return inboundMessage({
        chat: { type: chat === 'direct' ? 'person' : 'group', id: String(id) },
        platform_message_id: `${id}:7`,
      });
    },
    delivered: (origin) => fake.deliveredTo(chatIdOf(origin)),
    previewCalls(origin) {
      const chatId = chatIdOf(origin);
      const posts = fake
        .sentMessages()
        .filter((sent) => Number(sent.body.chat_id) === chatId)
        .map((sent) => sent.at);
      const edits = fake
        .edits()
        .filter((edit) => Number(edit.chatId) === chatId)
        .map((edit) => edit.at);
      return [...posts, ...edits].sort((a, b) => a - b);
    },
    typingCalls: (origin) =>
      fake.callsOf('sendChatAction').filter((call) => Number(call.body.chat_id) === chatIdOf(origin)).length,
    failNextTyping: (of) => fake.failNext('sendChatAction', 1, failure(of)),
    eventOf: (original, type, text) => eventOf(original as TelegramEvent, type, text),
    failNextSend: (of) => fake.failNext('sendMessage', 1, failure(of)),
    rateLimitViolations: () => fake.rateLimitViolations(),
    maxConsumers: () => fake.maxOpenPolls(),
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
  splitLimit: 4096,
  // A send tried again posts the parts delivered before its failure again: a known gap.
  resendsSkipDelivered: false,
  typing: ['direct', 'group'],
  // Telegram tells bots of no deletion.
  events: ['edited', 'reaction'],
} as const;

const WEBHOOK: ChannelCapabilities = {
  ...COMMON,
  signedInbound: true,
  redelivery: true,
  connection: 'webhook',
  acknowledgement: 'ack',
};
describeChannelConformance('telegram (webhook)', {
  capabilities: WEBHOOK,
  start: () => startTelegramHarness('webhook'),
});

/**
 * Long polling: nothing is signed (the channel calls Telegram), and a confirmed update never comes
 * back, so redelivery is the refetch of an unconfirmed one, which the acknowledgement checks cover.
 */
const POLLING: ChannelCapabilities = {
  ...COMMON,
  signedInbound: false,
  redelivery: false,
  connection: 'single-owner',
  acknowledgement: 'ack',
};
describeChannelConformance('telegram (polling)', {
  capabilities: POLLING,
  start: () => startTelegramHarness('polling'),
  ownChannels,
});
