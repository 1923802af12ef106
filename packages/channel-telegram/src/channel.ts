import { autoRetry } from '@grammyjs/auto-retry';
import {
  ACKNOWLEDGED,
  type Disposition,
  type PacingOptions,
  channelPacing,
  dispositionOf,
  sendParts,
  showPreview,
  webhookPath,
} from '@switchboard/channel-kit';
import {
  type BackoffPolicy,
  type ChannelAdapter,
  type Ingress,
  type Logger,
  SwitchboardError,
  isSwitchboardError,
  newMessageId,
} from '@switchboard/core';
import type { FastifyInstance } from 'fastify';
import { Bot } from 'grammy';
import type { Update } from 'grammy/types';
import type { TelegramChannelConfig } from './options.js';
import { toChannelError } from './errors.js';
import { ALLOWED_UPDATES, type BotIdentity, normalizeUpdate } from './inbound/normalize.js';
import { parseUpdate } from './inbound/parse-update.js';
import { type ApiSignal, type Polling, startPolling } from './inbound/polling.js';
import { mountTelegramWebhook } from './inbound/webhook.js';
import { countRateLimits } from './outbound/count-rate-limits.js';
import { paceCalls } from './outbound/pace-calls.js';
import { renderReplies, renderTyping } from './outbound/render.js';
import { messageCalls } from './outbound/send.js';

/** Options of `createTelegramChannel`. */
export interface TelegramChannelOptions extends PacingOptions {
  /** The parsed `channels[]` entry of `type: telegram`. */
  config: TelegramChannelConfig;
  /** The gateway's HTTP server: webhook mode mounts `/telegram/<channel id>` on it at once. */
  server: FastifyInstance;
  logger: Logger;
  /** How long one getUpdates long poll waits (polling mode). Default: 30 s. */
  pollTimeoutMs?: number;
  /** Waits after failed getUpdates calls, doubling per failure. Default: 1 s up to 30 s. */
  pollRetry?: BackoffPolicy;
  /** The longest 429 `retry_after` a send waits for; a longer one fails the send. Default: 60 s. */
  maxRetryAfterMs?: number;
  /** Retries of one Bot API call after a 429 or 5xx answer. Default: 5. */
  maxCallRetries?: number;
  /** Clock, ms since the epoch. Default: `Date.now`. */
  now?: () => number;
}

/** Telegram shows a chat action for 5 s, or until the bot posts: renewed a little before it ends. */
const TYPING_INTERVAL_MS = 4_000;

const DEFAULTS = {
  pollTimeoutMs: 30_000,
  pollRetry: { baseDelayMs: 1_000, maxDelayMs: 30_000 },
  maxRetryAfterMs: 60_000,
  maxCallRetries: 5,
  now: Date.now,
} satisfies Partial<TelegramChannelOptions>;

/** Errors that mean the update itself is bad: fetching it again would not help. */
function isMalformedUpdate(err: unknown): boolean {
  return isSwitchboardError(err, 'SB_HTTP_BAD_REQUEST') || isSwitchboardError(err, 'SB_MESSAGE_INVALID');
}

/**
 * The Telegram channel (docs/design.md §3 "telegram") on grammY. `start` calls getMe, then either
 * deletes any webhook and long-polls, or (webhook mode) registers the webhook when
 * `webhook.url` is set. Every update goes through `ingress.accept` with its `update_id` as the
 * delivery id, and Telegram is acknowledged only after that resolved. Replies go to the origin
 * chat and topic, split at 4096 characters, paced by the token buckets of `outbound.rate`; a 429
 * `retry_after` is still waited out, up to `maxRetryAfterMs`. A streamed answer is previewed by
 * posting its first 4096 characters and editing that message (edits paced like sends); the final
 * send edits it into the first chunk of the answer. While a turn runs, `typing` sends the `typing`
 * chat action (sendChatAction) when the bot's pacing bucket has a token free.
 */
export function createTelegramChannel(options: TelegramChannelOptions): ChannelAdapter {
  const { config } = options;
  const now = options.now ?? DEFAULTS.now;
  const maxRetryAfterMs = options.maxRetryAfterMs ?? DEFAULTS.maxRetryAfterMs;
  const logger = options.logger.child({ component: 'channel.telegram', channel: config.id });

  const { pacer, observer } = channelPacing(config.id, config.outbound.rate, options);

  // grammY refuses an apiRoot with a trailing slash; users paste them.
  const bot = new Bot(config.token, { client: { apiRoot: config.apiRoot?.replace(/\/+$/, '') } });
  // The last transformer installed is the outermost: auto-retry wraps pacing, which wraps the
  // 429 count, so that every attempt is paced and every 429 counted.
  bot.api.config.use(countRateLimits((retryAfterMs) => observer.rateLimited(config.id, retryAfterMs)));
  bot.api.config.use(paceCalls(pacer));
  bot.api.config.use(
    autoRetry({
      maxDelaySeconds: maxRetryAfterMs / 1000,
      maxRetryAttempts: options.maxCallRetries ?? DEFAULTS.maxCallRetries,
      // Network failures surface at once: auto-retry would repeat them forever.
      rethrowHttpErrors: true,
    }),
  );

  let ingress: Ingress | null = null;
  let identity: BotIdentity | null = null;
  let polling: Polling | null = null;
  // One per start: the channel starts again after a stop when it regains its lease.
  let stopping = new AbortController();

  async function handle(update: Update): Promise<Disposition> {
    if (ingress === null || identity === null) {
      // Only a poll that was in flight during `stop` gets here; the update stays unconfirmed.
      return {
        acknowledge: false,
        code: 'SB_DRAINING',
        message: `telegram channel "${config.id}" is not running`,
        retryAfterMs: 1_000,
      };
    }
    const updateId = update.update_id;
    const result = normalizeUpdate(update, {
      channelId: config.id,
      bot: identity,
      id: newMessageId(),
      receivedAt: now(),
    });
    if ('unsupported' in result) {
      logger.debug({ updateId, kind: result.unsupported }, 'unsupported update ignored');
      return ACKNOWLEDGED;
    }
    const accepted = await ingress.accept(result.message, String(updateId));
    logger.debug({ updateId, messageId: result.message.id, status: accepted.status }, 'update accepted');
    return dispositionOf(accepted);
  }

  /** Polled updates come from Telegram, but one that cannot be read is skipped, not retried forever. */
  async function handlePolled(update: Update): Promise<Disposition> {
    try {
      return await handle(parseUpdate(update));
    } catch (err) {
      if (!isMalformedUpdate(err)) throw err;
      logger.warn({ err, updateId: update.update_id }, 'malformed update skipped');
      return ACKNOWLEDGED;
    }
  }

  if (config.mode === 'webhook') {
    if (config.webhook === undefined) {
      throw new SwitchboardError('SB_CONFIG_INVALID', {
        message: `channels[${config.id}].webhook: required when mode is webhook`,
      });
    }
    mountTelegramWebhook({
      server: options.server,
      channelId: config.id,
      secretToken: config.webhook.secretToken,
      logger,
      handler: () => (ingress === null ? null : handle),
    });
  }

  async function callApi<T>(method: string, run: () => Promise<T>): Promise<T> {
    try {
      return await run();
    } catch (err) {
      throw toChannelError(err, { channelId: config.id, method, token: config.token });
    }
  }

  const callsOf = (signal: AbortSignal) =>
    messageCalls({ api: bot.api, channelId: config.id, token: config.token, signal });

  /** getMe, then whatever the mode needs before updates can flow. */
  async function connect(): Promise<BotIdentity> {
    await callApi('getMe', () => bot.init(stopping.signal as ApiSignal));
    if (config.mode === 'polling') {
      await callApi('deleteWebhook', () => bot.api.deleteWebhook({ drop_pending_updates: false }));
    } else if (config.webhook?.url !== undefined) {
      const { url, secretToken } = config.webhook;
      await callApi('setWebhook', () =>
        bot.api.setWebhook(url, { secret_token: secretToken, allowed_updates: [...ALLOWED_UPDATES] }),
      );
    }
    return { id: bot.botInfo.id, username: bot.botInfo.username };
  }

  return {
    id: config.id,
    type: 'telegram',
    singleConsumer: config.mode === 'polling',

    async start(context) {
      stopping = new AbortController();
      identity = await connect();
      ingress = context.ingress;
      if (config.mode === 'polling') {
        polling = startPolling({
          api: bot.api,
          channelId: config.id,
          token: config.token,
          pollTimeoutMs: options.pollTimeoutMs ?? DEFAULTS.pollTimeoutMs,
          retry: options.pollRetry ?? DEFAULTS.pollRetry,
          handle: handlePolled,
          logger,
        });
      }
      logger.info(
        {
          mode: config.mode,
          bot: identity.username,
          ...(config.mode === 'webhook' ? { path: webhookPath('telegram', config.id) } : {}),
        },
        'channel started',
      );
    },

    async stop() {
      stopping.abort();
      ingress = null;
      await polling?.stop();
      polling = null;
      logger.info({}, 'channel stopped');
    },

    async send(origin, replies, signal, sendOptions) {
      await sendParts(renderReplies(origin, replies), callsOf(signal), sendOptions?.draft);
    },

    preview(origin, text, draft, signal) {
      return showPreview(renderReplies(origin, [{ text }]), callsOf(signal), draft);
    },

    typingIntervalMs: TYPING_INTERVAL_MS,

    async typing(origin, signal) {
      if (!(await pacer.tryPace())) return;
      const { chat_id, ...thread } = renderTyping(origin);
      await callApi('sendChatAction', () =>
        bot.api.sendChatAction(chat_id, 'typing', thread, signal as unknown as ApiSignal),
      );
    },

    health() {
      if (ingress === null) return { ready: false, detail: 'not running (before start or after stop)' };
      if (polling !== null && !polling.running)
        return { ready: false, detail: 'the getUpdates loop has ended' };
      return { ready: true };
    },
  };
}
