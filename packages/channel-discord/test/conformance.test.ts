import {
  type ChannelCapabilities,
  type ChannelHarness,
  type EventSpec,
  type PlatformEvent,
  type SendFailure,
  type TypingFailure,
  conformanceOutbound,
  describeChannelConformance,
} from '@switchboard/contracts';
import { ownChannels } from '@switchboard/channel-kit';
import type { EventType, InboundMessage } from '@switchboard/core';
import {
  type FakeDiscordFailure,
  type FakeMessageInput,
  startFakeDiscord,
} from '@switchboard/testkit/discord';
import { eventually } from '@switchboard/testkit/eventually';
import { inboundMessage } from '@switchboard/testkit/inbound-message';
import { createDiscordChannel } from '../src/index.js';
import { DiscordChannelSchema } from '../src/options.js';

const TOKEN = 'conformance-discord-token';
/** The per-channel limit of the fake and of the adapters' pacing: fast, so that 5× it takes about a second. */
const PER_CHAT = { limit: 5, perMs: 250 };
const SEND_TIMEOUT_MS = 1_000;
const EDIT_INTERVAL_MS = 200;
/** discord.js waits every 429 out itself: a short one, so that the check waits it out too. */
const RATE_LIMIT_HINT_MS = 300;
const GUILD = '1300000000000000000';
/** Guild channels for group events, one per event. */
const GUILD_CHANNELS = Array.from({ length: 50 }, (_, index) =>
  String(1_300_000_000_000_000_100n + BigInt(index)),
);

interface DiscordEvent extends PlatformEvent {
  message: FakeMessageInput;
  /** The MESSAGE_CREATE payload, once delivered: what its edits, deletions and reactions name. */
  created?: Record<string, unknown>;
  /** For an edit, deletion or reaction: the dispatch that delivers it. */
  dispatch?: () => void;
}

async function startDiscordHarness(): Promise<ChannelHarness> {
  const fake = await startFakeDiscord({ token: TOKEN, rateLimits: { perChannel: PER_CHAT } });
  fake.guildCreate({ id: GUILD, channels: GUILD_CHANNELS.map((id) => ({ id })) });
  const author = { id: '234567890123456789', username: 'alice' };
  let nextDm = 1_240_000_000_000_000_000n;
  let nextGroup = 0;

  const config = DiscordChannelSchema.parse({
    id: 'dc',
    type: 'discord',
    token: TOKEN,
    api_url: fake.url,
    outbound: conformanceOutbound({
      sendTimeoutMs: SEND_TIMEOUT_MS,
      editIntervalMs: EDIT_INTERVAL_MS,
      perChat: PER_CHAT,
    }),
  });

  function failure(of: SendFailure | TypingFailure): FakeDiscordFailure {
    if (of.kind === 'hang') return { hang: true };
    if (of.kind === 'server_error') return { status: 500 };
    if (of.kind === 'rate_limited') return { status: 429, retryAfterMs: RATE_LIMIT_HINT_MS };
    return { status: 401 };
  }

  const channelOf = (origin: InboundMessage) => origin.chat.thread ?? origin.chat.id;

  /** A MESSAGE_UPDATE, MESSAGE_DELETE or MESSAGE_REACTION_ADD about the message `original` carries. */
  function eventOf(original: DiscordEvent, type: EventType, text: string): DiscordEvent {
    const { created } = original;
    if (created === undefined) throw new Error('an event of a message not delivered');
    const dispatch = {
      edited: () => fake.messageUpdate(created, text),
      deleted: () => fake.messageDelete(created),
      reaction: () => fake.reaction(created, author, '👍'),
    }[type];
    return {
      key: `${original.key} ${type}`,
      spec: { ...original.spec, text },
      message: original.message,
      dispatch,
    };
  }
  const newDm = () => {
    nextDm += 1n;
    return String(nextDm);
  };

  return {
    secrets: [TOKEN],
    rateLimitHintMs: RATE_LIMIT_HINT_MS,
    sendTimeoutMs: SEND_TIMEOUT_MS,
    editIntervalMs: EDIT_INTERVAL_MS,
    perChatLimit: PER_CHAT,
    createAdapter: ({ logger }) => createDiscordChannel({ config, logger, startTimeoutMs: 5_000 }),
    event(spec: EventSpec): DiscordEvent {
      if (spec.chat === 'direct') {
        return {
          key: spec.text,
          spec,
          message: { channel_id: newDm(), channel_type: 1, author, content: spec.text },
        };
      }
      const channel = GUILD_CHANNELS[nextGroup++ % GUILD_CHANNELS.length] ?? '';
      const mention = spec.mention === true;
      return {
        key: spec.text,
        spec,
        message: {
          channel_id: channel,
          guild_id: GUILD,
          author,
          content: mention ? `<@${fake.botUser.id}> ${spec.text}` : spec.text,
          mentions: mention ? [fake.botUser] : [],
        },
      };
    },
    async deliver(event, deliveryMode) {
      const { message } = event as DiscordEvent;
      // The gateway dispatches on a live session only: after a takeover, once the new holder identified.
      await eventually(() => fake.connected(), 5_000, 'a live gateway session');
      if (deliveryMode === 'malformed') {
        // A MESSAGE_CREATE with no author: the gateway's framing is fine, the message is not.
        fake.dispatch('MESSAGE_CREATE', { id: newDm(), channel_id: message.channel_id, content: 'x' });
      } else if (deliveryMode === 'signed') {
        const delivered = event as DiscordEvent;
        if (delivered.dispatch !== undefined) delivered.dispatch();
        else delivered.created = fake.messageCreate(message);
      } else {
        throw new Error(`the Discord gateway has no ${deliveryMode} delivery`);
      }
      // The gateway never hears back about a dispatch: it is out once sent.
      return { acknowledged: true };
    },
    origin(chat) {
      const id = chat === 'direct' ? newDm() : (GUILD_CHANNELS[nextGroup++ % GUILD_CHANNELS.length] ?? '');
      return inboundMessage({
        platform: 'discord',
        channel: 'dc',
        chat: { type: chat === 'direct' ? 'person' : 'group', id },
        platform_message_id: newDm(),
      });
    },
    delivered: (origin) =>
      fake
        .sentMessages()
        .filter((sent) => sent.channelId === channelOf(origin))
        .map((sent) => String(sent.body.content)),
    previewCalls(origin) {
      const path = `/channels/${channelOf(origin)}/messages`;
      return fake.requests
        .filter((request) => request.path.startsWith(path) && request.method !== 'GET')
        .map((request) => request.at)
        .sort((a, b) => a - b);
    },
    typingCalls: (origin) =>
      fake.requests.filter(
        (request) => request.method === 'POST' && request.path === `/channels/${channelOf(origin)}/typing`,
      ).length,
    failNextTyping: (of) => fake.failNext(1, failure(of)),
    eventOf: (original, type, text) => eventOf(original as DiscordEvent, type, text),
    failNextSend: (of) => fake.failNext(1, failure(of)),
    rateLimitViolations: () => fake.rateLimitViolations(),
    maxConsumers: () => fake.maxOpenSockets(),
    close: () => fake.close(),
  };
}

/** The gateway pushes events once, unsigned over the bot's own connection, and never redelivers. */
const DISCORD: ChannelCapabilities = {
  signedInbound: false,
  redelivery: false,
  groups: true,
  platformSends: true,
  preview: true,
  pacing: true,
  splitLimit: 2_000,
  connection: 'single-owner',
  // A send tried again posts the parts delivered before its failure again: a known gap.
  resendsSkipDelivered: false,
  acknowledgement: 'none',
  typing: ['direct', 'group'],
  events: ['edited', 'deleted', 'reaction'],
};
describeChannelConformance('discord', { capabilities: DISCORD, start: startDiscordHarness, ownChannels });
