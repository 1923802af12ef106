import {
  ACKNOWLEDGED,
  type Disposition,
  deliveryKey,
  dispositionOf,
  mountWebhook,
  requestPlatform,
  verifyHmacSha256,
  webhookPath,
} from '@switchboard/channel-kit';
import {
  type ChannelAdapter,
  type InboundMessage,
  type Ingress,
  type IngressResult,
  type Logger,
  isSwitchboardError,
  newMessageId,
} from '@switchboard/core';
import type { FastifyInstance } from 'fastify';
import type { LineChannelConfig } from './options.js';
import { type LineMessageEvent, normalizeLineEvent } from './inbound/normalize.js';
import { type LineWebhookBody, parseLineBody } from './inbound/parse-body.js';
import { createLineSender } from './outbound/send.js';

/** Options of `createLineChannel`. */
export interface LineChannelOptions {
  /** The parsed `channels[]` entry of `type: line`. */
  config: LineChannelConfig;
  /** The gateway's HTTP server: the webhook is mounted at `/line/<channel id>` at once. */
  server: FastifyInstance;
  logger: Logger;
  /** Clock, ms since the epoch. Default: `Date.now`. */
  now?: () => number;
}

const DEFAULTS = { now: Date.now } satisfies Partial<LineChannelOptions>;

const SIGNATURE_HEADER = 'x-line-signature';

/**
 * The LINE channel (Messaging API). `start` checks the channel access token (`GET /v2/bot/info`).
 * Webhooks arrive at `POST /line/<channel id>`, signed (`x-line-signature`, base64 HMAC-SHA256 of
 * the body with the channel secret: 401 otherwise, checked before the body is parsed). Each event
 * of a request goes to the ingress in order, keyed on its `webhookEventId`, so that a redelivered
 * event is a duplicate; a malformed one is skipped and the rest taken. The answer waits for the
 * ingress. With `webhook_redelivery` on, an event the gateway cannot take is answered 503 so that
 * LINE sends it again; off, LINE never would, so it is recorded as dropped and the request
 * answered 200. Replies: `outbound/send.ts`.
 */
export function createLineChannel(options: LineChannelOptions): ChannelAdapter {
  const { config } = options;
  const now = options.now ?? DEFAULTS.now;
  const logger = options.logger.child({ component: 'channel.line', channel: config.id });
  const apiUrl = config.apiUrl.replace(/\/+$/, '');
  const path = webhookPath('line', config.id);
  const last = !config.webhookRedelivery;
  let ingress: Ingress | null = null;
  const sender = createLineSender({
    channelId: config.id,
    apiUrl,
    channelAccessToken: config.channelAccessToken,
    timeoutMs: config.outbound.sendTimeoutMs,
    maxAgeMs: config.outbound.maxAgeMs,
    now,
  });

  /** Takes one event to the ingress; resolves with a disposition only when the request must be refused. */
  async function accept(current: Ingress, event: unknown, index: number): Promise<Disposition | null> {
    let message: InboundMessage | null;
    try {
      message = normalizeLineEvent(event, {
        channelId: config.id,
        messageId: newMessageId(),
        receivedAt: now(),
      });
    } catch (err) {
      if (!isSwitchboardError(err, 'SB_HTTP_BAD_REQUEST') && !isSwitchboardError(err, 'SB_MESSAGE_INVALID'))
        throw err;
      logger.warn({ err, index }, 'malformed line event skipped');
      return null;
    }
    if (message === null) {
      logger.debug({ index, type: (event as { type?: unknown }).type }, 'line event ignored');
      return null;
    }
    const { webhookEventId: eventId, replyToken, timestamp } = message.raw as LineMessageEvent;
    // Before the ingress: the answer may be sent before `accept` resolves.
    if (replyToken !== undefined) sender.remember(message.id, replyToken, timestamp);
    let result: IngressResult;
    try {
      result = await current.accept(message, deliveryKey(eventId), { last });
    } catch (err) {
      if (!last) throw err;
      logger.error({ err, eventId }, 'dropped without redelivery: ingress failed');
      current.drop(message, 'ingress_failed', err);
      return null;
    }
    if (result.status !== 'refused') return null;
    if (!last) return dispositionOf(result);
    logger.warn({ eventId, reason: result.reason }, 'dropped without redelivery: refused');
    current.drop(message, 'refused');
    return null;
  }

  mountWebhook<LineWebhookBody>(options.server, {
    path,
    name: `line channel "${config.id}"`,
    logger,
    verify: ({ headers, rawBody }) => {
      const signature = headers[SIGNATURE_HEADER];
      const presented = typeof signature === 'string' ? signature : undefined;
      return verifyHmacSha256(config.channelSecret, rawBody, presented, 'base64')
        ? null
        : `${SIGNATURE_HEADER}: missing or not made with channels[${config.id}].channel_secret`;
    },
    parse: parseLineBody,
    handler: () => {
      const current = ingress;
      if (current === null) return null;
      return async ({ events }) => {
        for (const [index, event] of events.entries()) {
          // LINE redelivers the events of a refused request; those taken already are duplicates then.
          const refused = await accept(current, event, index);
          if (refused !== null) return refused;
        }
        return ACKNOWLEDGED;
      };
    },
  });

  return {
    id: config.id,
    type: 'line',

    async start(context) {
      const bot = (await requestPlatform({
        where: { type: 'line', channelId: config.id, call: 'GET /v2/bot/info' },
        method: 'GET',
        url: `${apiUrl}/v2/bot/info`,
        headers: { authorization: `Bearer ${config.channelAccessToken}` },
        timeoutMs: config.outbound.sendTimeoutMs,
        secrets: [config.channelAccessToken],
        credentialPath: `channels[${config.id}].channel_access_token`,
      })) as { basicId?: unknown };
      ingress = context.ingress;
      logger.info({ path, bot: bot.basicId }, 'channel started');
    },

    async stop() {
      ingress = null;
      logger.info({}, 'channel stopped');
    },

    send: (origin, replies, signal, sendOptions) =>
      sender.send(origin, replies, signal, sendOptions?.turn ?? origin.id),

    health() {
      return ingress === null
        ? { ready: false, detail: 'not running (before start or after stop)' }
        : { ready: true };
    },
  };
}
