import { App, type AuthorizeResult, type Receiver } from '@slack/bolt';
import { type PacingOptions, channelPacing, sendParts, showPreview } from '@switchboard/channel-kit';
import {
  type BackoffPolicy,
  type ChannelAdapter,
  type InboundMessage,
  type Ingress,
  type Logger,
  SwitchboardError,
  newMessageId,
  pacedChatOf,
} from '@switchboard/core';
import type { FastifyInstance } from 'fastify';
import type { SlackChannelConfig } from './options.js';
import { toBoltLogger } from './bolt-logger.js';
import { openSlackMedia } from './inbound/open-media.js';
import { toChannelError } from './errors.js';
import { acceptDelivery } from './inbound/accept-delivery.js';
import { DELIVERY_KEY, type Delivery } from './inbound/delivery.js';
import { createEventsReceiver } from './inbound/events-receiver.js';
import { normalizeSlackEvent } from './inbound/normalize.js';
import { type SocketModeReceiver, createSocketModeReceiver } from './inbound/socket-mode-receiver.js';
import { assistantThreadOf, renderSlackReplies } from './outbound/render.js';
import { type SendOptions, createSendClient, messageCalls, setTypingStatus } from './outbound/send.js';

/** Options of `createSlackChannel`. */
export interface SlackChannelOptions extends PacingOptions {
  /** The parsed `channels[]` entry of `type: slack`. */
  config: SlackChannelConfig;
  /** The gateway's HTTP server: the Events API is mounted at `/slack/<channel id>/events`. */
  server: FastifyInstance;
  logger: Logger;
  /** The longest an Events API request waits for the journal before answering 503. Default: 2.5 s. */
  ackDeadlineMs?: number;
  /** How many times a rate-limited `chat.postMessage` is retried. Default: 3. */
  maxRateLimitRetries?: number;
  /** A longer Retry-After than this fails the send instead of waiting. Default: 30 s. */
  maxRateLimitWaitMs?: number;
  /** How many times a `chat.postMessage` that met a network failure or a 5xx is retried. Default: 2. */
  maxTransientRetries?: number;
  /** The waits between those retries, doubling. Default: 250 ms up to 2 s. */
  transientRetry?: BackoffPolicy;
  /** Clock, ms since the epoch. Default: `Date.now`. */
  now?: () => number;
}

/**
 * An assistant thread's status stays until the app replies, or two minutes pass without one: it
 * is set again once a minute while a turn runs.
 */
const TYPING_INTERVAL_MS = 60_000;

const DEFAULTS = {
  // Slack wants an answer within 3 s; the rest is the network's.
  ackDeadlineMs: 2_500,
  maxRateLimitRetries: 3,
  maxRateLimitWaitMs: 30_000,
  maxTransientRetries: 2,
  transientRetry: { baseDelayMs: 250, maxDelayMs: 2_000 },
  now: Date.now,
} satisfies Partial<SlackChannelOptions>;

/** `auth.test` at start: network failures and 5xx retried by the client itself, briefly. */
const CLIENT_RETRY = { retries: 2, factor: 2, minTimeout: 250, maxTimeout: 2_000 };

/** Who the bot is: its user id makes mentions of it recognisable. */
interface BotIdentity {
  botUserId: string;
  botId?: string;
  botName?: string;
}

/** Bolt's WebClient appends method names to the base URL, so it must end with a slash. */
function slackApiUrlOf(apiUrl: string | undefined): string | undefined {
  if (apiUrl === undefined) return undefined;
  return apiUrl.endsWith('/') ? apiUrl : `${apiUrl}/`;
}

/**
 * The Slack channel (docs/design.md §3 "slack") on Bolt. Events arrive through the Events API at
 * `POST /slack/<channel id>/events` in the gateway's server (signed, answered after the journal
 * write) or, when `app_token` is set, through Socket Mode. `message` and `app_mention` events
 * become messages; the rest is acknowledged and ignored. Replies go out with `chat.postMessage`
 * in the origin's channel and thread, paced by the token buckets of `outbound.rate`; a 429 is
 * still waited out (Retry-After).
 */
export function createSlackChannel(options: SlackChannelOptions): ChannelAdapter {
  const { config } = options;
  const now = options.now ?? DEFAULTS.now;
  const logger = options.logger.child({ component: 'channel.slack', channel: config.id });
  const slackApiUrl = slackApiUrlOf(config.apiUrl);
  const { pacer, observer } = channelPacing(config.id, config.outbound.rate, options);
  const { mode } = config.transport;
  let ingress: Ingress | null = null;
  let identity: BotIdentity | null = null;
  // Events between a start and a stop racing with them: the platform redelivers after a 503.
  const notRunning = () =>
    new SwitchboardError('SB_DRAINING', { message: `slack channel "${config.id}" is not running` });

  const boltLogger = toBoltLogger(logger);
  /** The Events API route in the gateway's server, or Socket Mode with its client for health. */
  function createReceiver(): { receiver: Receiver; socketMode: SocketModeReceiver | null } {
    const { transport } = config;
    if (transport.mode === 'socket_mode') {
      const socketMode = createSocketModeReceiver({
        appToken: transport.appToken,
        slackApiUrl,
        channelId: config.id,
        boltLogger,
        logger,
      });
      return { receiver: socketMode, socketMode };
    }
    const receiver = createEventsReceiver({
      server: options.server,
      channelId: config.id,
      signingSecret: transport.signingSecret,
      ackDeadlineMs: options.ackDeadlineMs ?? DEFAULTS.ackDeadlineMs,
      now,
      logger,
    });
    return { receiver, socketMode: null };
  }
  const { receiver, socketMode } = createReceiver();

  // In Socket Mode, /readyz follows the WebSocket: the client reconnects by itself, but while it
  // does no event can arrive.
  let socketState = 'not connected';
  for (const state of ['connecting', 'connected', 'reconnecting', 'disconnected'] as const) {
    socketMode?.client.on(state, () => {
      socketState = state;
    });
  }

  const app = new App({
    receiver,
    // One workspace, one token: the identity is learned once at start (or configured), instead
    // of Bolt's single-token mode, which calls auth.test per event unless it has both bot ids.
    authorize: async (): Promise<AuthorizeResult> => {
      if (identity === null) throw notRunning();
      return { botToken: config.botToken, botUserId: identity.botUserId, botId: identity.botId };
    },
    logger: boltLogger,
    // The bot's own messages go to ingress like any other, which records them as ignored.
    ignoreSelf: false,
    convoStore: false,
    clientOptions: {
      ...(slackApiUrl === undefined ? {} : { slackApiUrl }),
      // A 429 comes back as WebAPIRateLimitedError, reported as SB_CHANNEL_RATE_LIMITED; the
      // client's own wait would end in an untyped error after its retries.
      rejectRateLimitedCalls: true,
      retryConfig: CLIENT_RETRY,
    },
  });
  // Errors go back to the receiver (a 400 for a malformed event, 500 otherwise), unwrapped from
  // Bolt's UnknownError, and are logged once there.
  app.error(async (error) => {
    throw (error as { original?: unknown }).original ?? error;
  });

  const onEvent = async ({
    event,
    body,
    context,
  }: {
    event: unknown;
    body: Record<string, unknown>;
    context: Record<string, unknown>;
  }) => {
    const eventId = body.event_id;
    const current = ingress;
    if (current === null || identity === null) throw notRunning();
    const message = normalizeSlackEvent(event, {
      channelId: config.id,
      botUserId: identity.botUserId,
      ...(identity.botName === undefined ? {} : { botName: identity.botName }),
      messageId: newMessageId(),
      receivedAt: now(),
      maxMediaBytes: config.media.maxBytes,
    });
    if (message === null) {
      const { type, subtype } = event as { type?: unknown; subtype?: unknown };
      logger.debug({ eventId, type, subtype }, 'slack event ignored');
      return;
    }
    // Our receivers always pass a Delivery; without one (no receiver of ours) nobody could answer Slack.
    const delivery = context[DELIVERY_KEY] as Delivery | undefined;
    await acceptDelivery(current, message, delivery ?? { last: false }, logger);
  };
  app.event('message', onEvent);
  app.event('app_mention', onEvent);
  app.event('reaction_added', onEvent);
  app.event('reaction_removed', onEvent);

  async function whoAmI(): Promise<BotIdentity> {
    if (config.botUserId !== undefined) return { botUserId: config.botUserId };
    try {
      const auth = await app.client.auth.test({ token: config.botToken });
      if (auth.user_id === undefined) throw new Error('auth.test returned no user_id');
      return { botUserId: auth.user_id, botId: auth.bot_id, botName: auth.user };
    } catch (error) {
      throw toChannelError(error, { channelId: config.id, method: 'auth.test', token: config.botToken });
    }
  }

  /**
   * How this channel's posts and updates into `origin`'s chat are made: with a client paced for
   * that chat, whose requests `signal` aborts.
   */
  function outboundOptions(
    origin: InboundMessage,
    signal: AbortSignal,
    pace: () => Promise<unknown> = () => pacer.pace(pacedChatOf(origin), signal),
  ): SendOptions {
    return {
      client: createSendClient({ slackApiUrl, logger: boltLogger, pace, signal }),
      botToken: config.botToken,
      channelId: config.id,
      allowPrivateUrls: config.outbound.allowPrivateUrls,
      maxRateLimitRetries: options.maxRateLimitRetries ?? DEFAULTS.maxRateLimitRetries,
      maxRateLimitWaitMs: options.maxRateLimitWaitMs ?? DEFAULTS.maxRateLimitWaitMs,
      maxTransientRetries: options.maxTransientRetries ?? DEFAULTS.maxTransientRetries,
      transientRetry: options.transientRetry ?? DEFAULTS.transientRetry,
      onRateLimited: (retryAfterMs) => observer.rateLimited(config.id, retryAfterMs),
      signal,
      logger,
    };
  }

  return {
    id: config.id,
    type: 'slack',
    singleConsumer: mode === 'socket_mode',

    async start(context) {
      identity = await whoAmI();
      ingress = context.ingress;
      await app.start();
      logger.info(
        {
          mode,
          botUserId: identity.botUserId,
          ...(mode === 'events_api' ? { path: `/slack/${config.id}/events` } : {}),
        },
        'channel started',
      );
    },

    async stop() {
      ingress = null;
      await app.stop();
      logger.info({}, 'channel stopped');
    },

    async send(origin, replies, signal, sendOptions) {
      const calls = messageCalls(outboundOptions(origin, signal));
      await sendParts(renderSlackReplies(origin, replies), calls, sendOptions?.draft);
    },

    preview(origin, text, draft, signal) {
      const calls = messageCalls(outboundOptions(origin, signal));
      return showPreview(renderSlackReplies(origin, [{ text }]), calls, draft);
    },

    typingIntervalMs: TYPING_INTERVAL_MS,

    async typing(origin, signal) {
      const thread = assistantThreadOf(origin);
      if (thread === undefined || !(await pacer.tryPace())) return;
      // Paced once above: the status request itself waits for nothing.
      await setTypingStatus(
        outboundOptions(origin, signal, async () => {}),
        thread,
      );
    },

    openMedia(media, signal) {
      return openSlackMedia(
        { channelId: config.id, botToken: config.botToken, apiUrl: config.apiUrl },
        media,
        signal,
      );
    },

    health() {
      if (ingress === null) return { ready: false, detail: 'not running (before start or after stop)' };
      if (mode === 'socket_mode' && socketState !== 'connected') {
        return { ready: false, detail: `socket mode ${socketState}` };
      }
      return { ready: true };
    },
  };
}
