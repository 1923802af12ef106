import { once } from 'node:events';
import {
  type PacingOptions,
  channelPacing,
  redact,
  retryAfterMs,
  sendParts,
  showPreview,
} from '@switchboard/channel-kit';
import {
  type ChannelAdapter,
  type InboundMessage,
  type Logger,
  newMessageId,
  pacedChatOf,
} from '@switchboard/core';
import {
  Client,
  Events,
  GatewayIntentBits,
  type Message,
  type MessageReaction,
  type PartialMessage,
  type PartialMessageReaction,
  type PartialUser,
  Partials,
  REST,
  RESTEvents,
  type User,
} from 'discord.js';
import type { DiscordChannelConfig } from './options.js';
import { toStartError } from './errors.js';
import { createGatewayHealth } from './gateway-health.js';
import { type AcceptQueue, createAcceptQueue } from './inbound/accept-queue.js';
import { toMessageData, toMessagePlace, userData } from './inbound/message-data.js';
import {
  type NormalizeContext,
  normalizeDeletion,
  normalizeEdit,
  normalizeMessage,
  normalizeReaction,
} from './inbound/normalize.js';
import { openDiscordMedia } from './inbound/open-media.js';
import { renderReplies } from './outbound/render.js';
import { type Outbound, messageCalls, sendTyping } from './outbound/send.js';

/** Options of `createDiscordChannel`. */
export interface DiscordChannelOptions extends PacingOptions {
  /** The parsed `channels[]` entry of `type: discord`. */
  config: DiscordChannelConfig;
  logger: Logger;
  /** How long `start` waits for the gateway session (READY and the guilds). Default: 30 s. */
  startTimeoutMs?: number;
  /** Clock, ms since the epoch. Default: `Date.now`. */
  now?: () => number;
}

/** Discord shows typing for 10 s, or until the bot posts: renewed a little before it ends. */
const TYPING_INTERVAL_MS = 8_000;

const DEFAULTS = {
  startTimeoutMs: 30_000,
  now: Date.now,
} satisfies Partial<DiscordChannelOptions>;

/**
 * The Discord channel (docs/design.md §3 "discord") on discord.js: a gateway client with the Guilds,
 * GuildMessages, DirectMessages, MessageContent and both message reaction intents. `start` logs in
 * and resolves once the gateway is ready; MESSAGE_CREATE events become unified messages handed to
 * the ingress in order (Discord's message id is the dedup key), and MESSAGE_UPDATE (edits),
 * MESSAGE_DELETE and MESSAGE_REACTION_ADD/REMOVE become events (docs/design.md §2 "Events"); `send` posts replies through a REST client of its own,
 * so replies still go out while the gateway reconnects or after it stopped. discord.js resumes
 * or re-identifies after a dropped connection; `health` is ready only while the gateway is.
 */
export function createDiscordChannel(options: DiscordChannelOptions): ChannelAdapter {
  const { config } = options;
  const now = options.now ?? DEFAULTS.now;
  const startTimeoutMs = options.startTimeoutMs ?? DEFAULTS.startTimeoutMs;
  const logger = options.logger.child({ component: 'channel.discord', channel: config.id });
  // discord.js appends `/v10/…` to the API root itself.
  const restOptions = config.apiUrl === undefined ? {} : { api: config.apiUrl.replace(/\/+$/, '') };
  // Never set `rejectOnRateLimit`: the REST queue must wait out 429s, not throw them.
  const rest = new REST(restOptions).setToken(config.token);
  const { pacer, observer } = channelPacing(config.id, config.outbound.rate, options);
  rest.on(RESTEvents.Response, (_request, response) => {
    if (response.status !== 429) return;
    observer.rateLimited(config.id, retryAfterMs(response.headers.get('retry-after')) ?? 0);
  });
  /** What a send or preview answering `origin` calls Discord with. */
  const outboundOf = (origin: InboundMessage, signal: AbortSignal): Outbound => ({
    rest,
    channel: config.id,
    token: config.token,
    allowPrivateUrls: config.outbound.allowPrivateUrls,
    pacer,
    chat: pacedChatOf(origin),
    signal,
  });
  const health = createGatewayHealth();
  let client: Client | null = null;
  let queue: AcceptQueue | null = null;

  const contextOf = (botUserId: string): NormalizeContext => ({
    id: newMessageId(),
    channelId: config.id,
    botUserId,
    receivedAt: now(),
    maxMediaBytes: config.media.maxBytes,
  });

  function onMessage(message: Message, botUserId: string): void {
    try {
      const data = toMessageData(message);
      if (data === null) {
        logger.warn({ platformMessageId: message.id }, 'message without an author ignored');
        return;
      }
      const inbound = normalizeMessage(data, contextOf(botUserId));
      if (inbound === null) {
        logger.debug({ platformMessageId: data.id, type: data.type }, 'unsupported message type ignored');
        return;
      }
      queue?.push(inbound, data.id);
    } catch (err) {
      logger.warn({ err, platformMessageId: message.id }, 'failed to normalize message');
    }
  }

  /** Normalizes an edit, deletion or reaction and queues it; a failure is logged, never thrown. */
  function onEvent(platformMessageId: string, kind: string, normalize: () => InboundMessage | null): void {
    try {
      const inbound = normalize();
      if (inbound === null) {
        logger.debug({ platformMessageId, kind }, 'unsupported message event ignored');
        return;
      }
      queue?.push(inbound, inbound.platform_message_id);
    } catch (err) {
      logger.warn({ err, platformMessageId, kind }, 'failed to normalize message event');
    }
  }

  function onUpdate(updated: Message | PartialMessage, botUserId: string): void {
    onEvent(updated.id, 'update', () => {
      // Discord also updates a message to add link embeds: only an edited_timestamp makes it an edit.
      if (updated.partial || updated.editedTimestamp === null) return null;
      const data = toMessageData(updated);
      return data === null ? null : normalizeEdit(data, updated.editedTimestamp, contextOf(botUserId));
    });
  }

  function onReaction(
    reaction: MessageReaction | PartialMessageReaction,
    user: User | PartialUser,
    removed: boolean,
    botUserId: string,
  ): void {
    onEvent(reaction.message.id, removed ? 'reaction remove' : 'reaction add', () => {
      const emoji = reaction.emoji.name ?? reaction.emoji.id;
      // A partial user has its id only; the event needs nothing more of it.
      const reactor = userData({
        id: user.id,
        username: user.username ?? user.id,
        globalName: user.globalName ?? null,
        bot: user.bot ?? false,
      });
      if (emoji === null) return null;
      const { message } = reaction;
      const place = toMessagePlace({
        id: message.id,
        channelId: message.channelId,
        guildId: message.guildId,
        channel: message.channel,
        // The reaction's message author is not what the event is about: the reactor is its sender.
        author: null,
      });
      return normalizeReaction({ place, user: reactor, emoji, removed }, contextOf(botUserId));
    });
  }

  function createClient(): Client {
    const created = new Client({
      intents: [
        GatewayIntentBits.Guilds,
        GatewayIntentBits.GuildMessages,
        GatewayIntentBits.DirectMessages,
        GatewayIntentBits.MessageContent,
        GatewayIntentBits.GuildMessageReactions,
        GatewayIntentBits.DirectMessageReactions,
      ],
      // DM channels are not cached before their first message; without this partial discord.js drops
      // DMs. Edits, deletions and reactions concern messages sent before the client started (or
      // evicted from its cache): without the message, reaction and user partials it drops those too.
      partials: [Partials.Channel, Partials.Message, Partials.Reaction, Partials.User],
      rest: restOptions,
    });
    const botUserId = () => created.user?.id ?? '';
    created.on(Events.MessageCreate, (message) => onMessage(message, botUserId()));
    created.on(Events.MessageUpdate, (_old, updated) => onUpdate(updated, botUserId()));
    created.on(Events.MessageDelete, (deleted) =>
      onEvent(deleted.id, 'delete', () =>
        normalizeDeletion(
          toMessagePlace({
            id: deleted.id,
            channelId: deleted.channelId,
            guildId: deleted.guildId,
            channel: deleted.channel,
            author: deleted.author,
          }),
          contextOf(botUserId()),
        ),
      ),
    );
    created.on(Events.MessageReactionAdd, (reaction, user) => onReaction(reaction, user, false, botUserId()));
    created.on(Events.MessageReactionRemove, (reaction, user) =>
      onReaction(reaction, user, true, botUserId()),
    );
    created.on(Events.ShardReady, (shardId) => {
      health.shardUp(shardId);
      logger.info({ shardId }, 'gateway ready');
    });
    created.on(Events.ShardResume, (shardId, replayedEvents) => {
      health.shardUp(shardId);
      logger.info({ shardId, replayedEvents }, 'gateway resumed');
    });
    created.on(Events.ShardReconnecting, (shardId) => {
      if (client !== created) return; // closing on purpose
      health.shardReconnecting(shardId);
      logger.warn({ shardId }, 'gateway connection lost: reconnecting');
    });
    created.on(Events.ShardDisconnect, (event, shardId) => {
      health.shardDisconnected(shardId, event.code);
      logger.error(
        { shardId, closeCode: event.code },
        'gateway closed for good: check the token and intents',
      );
    });
    created.on(Events.ShardError, (err, shardId) => {
      logger.warn({ shardId, reason: redact(err.message, [config.token]) }, 'gateway connection error');
    });
    return created;
  }

  return {
    id: config.id,
    type: 'discord',
    singleConsumer: true,

    async start(context) {
      health.starting();
      queue = createAcceptQueue(context.ingress, logger);
      const created = createClient();
      client = created;
      const timeout = AbortSignal.timeout(startTimeoutMs);
      try {
        await Promise.all([
          created.login(config.token),
          once(created, Events.ClientReady, { signal: timeout }),
        ]);
      } catch (error) {
        client = null;
        await created.destroy();
        throw timeout.aborted
          ? toStartError(
              new Error(`the gateway was not ready within ${startTimeoutMs} ms`),
              config.id,
              config.token,
            )
          : toStartError(error, config.id, config.token);
      }
      logger.info({ botUserId: created.user?.id }, 'channel started');
    },

    async stop() {
      const closing = client;
      client = null;
      health.stopped();
      await closing?.destroy();
      await queue?.stop();
      logger.info({}, 'channel stopped');
    },

    send(origin, replies, signal, sendOptions) {
      return sendParts(
        renderReplies(origin, replies),
        messageCalls(outboundOf(origin, signal)),
        sendOptions?.draft,
      );
    },

    preview(origin, text, draft, signal) {
      return showPreview(renderReplies(origin, [{ text }]), messageCalls(outboundOf(origin, signal)), draft);
    },

    typingIntervalMs: TYPING_INTERVAL_MS,

    typing(origin, signal) {
      // A thread is a channel of its own for the API, as in `renderReplies`.
      return sendTyping(outboundOf(origin, signal), origin.chat.thread ?? origin.chat.id);
    },

    openMedia(media, signal) {
      return openDiscordMedia({ channelId: config.id, apiUrl: config.apiUrl }, media, signal);
    },

    health() {
      return health.health();
    },
  };
}
