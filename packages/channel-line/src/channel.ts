import {
  ACKNOWLEDGED,
  type Disposition,
  deliveryKey,
  dispositionOf,
  mountWebhook,
  verifyHmacSha256,
  webhookPath,
  refuseAttachments,
} from '@switchboard/channel-kit';
import {
  type ChannelAdapter,
  type Ingress,
  type Logger,
  isSwitchboardError,
  newMessageId,
} from '@switchboard/core';
import type { FastifyInstance } from 'fastify';
import type { LineChannelConfig } from './options.js';
import { type LineMessageEvent, normalizeLineEvent } from './inbound/normalize.js';
import { openLineMedia } from './inbound/open-media.js';
import { type LineWebhookBody, parseLineBody } from './inbound/parse-body.js';
import { lineAttachmentRefusal } from './outbound/render.js';
import { callLine, createLineSender } from './outbound/send.js';

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

/**
 * The LINE channel (Messaging API) on channel-kit. `start` checks the access token (`GET
 * /v2/bot/info`). Webhooks come to `POST /line/<channel id>`, signed: `x-line-signature` is the
 * base64 HMAC-SHA256 of the body with the channel secret, checked before anything parses it
 * (401). Each event of a request goes to the ingress in order, keyed on its `webhookEventId`, so
 * a redelivered one is a duplicate; a malformed one is skipped and the rest taken. The answer
 * waits for the ingress. With `webhook_redelivery`, an event the gateway cannot take is answered
 * 503 so that LINE sends it again; without, LINE never would, so it is recorded as dropped and
 * the request answered 200. Sending: `outbound/send.ts`.
 */
export function createLineChannel(options: LineChannelOptions): ChannelAdapter {
  const { config } = options;
  const now = options.now ?? DEFAULTS.now;
  const logger = options.logger.child({ component: 'channel.line', channel: config.id });
  const path = webhookPath('line', config.id);
  const last = !config.webhookRedelivery;
  const api = {
    channelId: config.id,
    apiUrl: config.apiUrl.replace(/\/+$/, ''),
    channelAccessToken: config.channelAccessToken,
    timeoutMs: config.outbound.sendTimeoutMs,
  };
  const sender = createLineSender(api, { maxAgeMs: config.outbound.maxAgeMs, now });
  let ingress: Ingress | null = null;

  /** The message of one event; `null` for none, or a malformed event (skipped, logged). */
  function messageOf(event: unknown, index: number, botUserId: string | undefined) {
    try {
      return normalizeLineEvent(event, {
        channelId: config.id,
        botUserId,
        messageId: newMessageId(),
        receivedAt: now(),
        maxMediaBytes: config.media.maxBytes,
      });
    } catch (err) {
      if (!isSwitchboardError(err, 'SB_HTTP_BAD_REQUEST') && !isSwitchboardError(err, 'SB_MESSAGE_INVALID'))
        throw err;
      logger.warn({ err, index }, 'malformed line event skipped');
      return null;
    }
  }

  /** Takes one event to the ingress; what LINE is told if it must deliver the request again. */
  async function take(
    current: Ingress,
    event: unknown,
    index: number,
    botUserId: string | undefined,
  ): Promise<Disposition> {
    const message = messageOf(event, index, botUserId);
    if (message === null) return ACKNOWLEDGED;
    const { webhookEventId, replyToken, timestamp } = message.raw as LineMessageEvent;
    // Before the ingress: the answer may be sent before `accept` resolves.
    if (replyToken !== undefined) sender.remember(message.id, replyToken, timestamp);
    const result = await current
      .accept(message, deliveryKey(webhookEventId), { last })
      .catch((err: unknown) => {
        if (!last) throw err;
        logger.error({ err, webhookEventId }, 'dropped, LINE does not redeliver: ingress failed');
        current.drop(message, 'ingress_failed', err);
        return null;
      });
    if (result?.status === 'refused' && last) current.drop(message, 'refused');
    return result === null || last ? ACKNOWLEDGED : dispositionOf(result);
  }

  mountWebhook<LineWebhookBody>(options.server, {
    path,
    name: `line channel "${config.id}"`,
    logger,
    verify: ({ headers, rawBody }) => {
      const signature = headers['x-line-signature'];
      const presented = typeof signature === 'string' ? signature : undefined;
      return verifyHmacSha256(config.channelSecret, rawBody, presented, 'base64')
        ? null
        : `x-line-signature: missing or not made with channels[${config.id}].channel_secret`;
    },
    parse: parseLineBody,
    handler: () => {
      const current = ingress;
      if (current === null) return null;
      return async ({ destination, events }) => {
        for (const [index, event] of events.entries()) {
          const disposition = await take(current, event, index, destination);
          // LINE delivers the request again; the events taken already are duplicates then.
          if (!disposition.acknowledge) return disposition;
        }
        return ACKNOWLEDGED;
      };
    },
  });

  return {
    id: config.id,
    type: 'line',

    async start(context) {
      const bot = (await callLine(api, '/v2/bot/info', { method: 'GET' })) as { basicId?: unknown };
      ingress = context.ingress;
      logger.info({ path, bot: bot.basicId }, 'channel started');
    },

    async stop() {
      ingress = null;
      logger.info({}, 'channel stopped');
    },

    async send(origin, replies, signal, sendOptions) {
      refuseAttachments(replies, { type: 'line', channelId: config.id }, lineAttachmentRefusal);
      await sender.send(origin, replies, signal, sendOptions?.turn ?? origin.id);
    },

    openMedia: (media, signal) =>
      openLineMedia(
        {
          channelId: config.id,
          dataApiUrl: config.dataApiUrl,
          channelAccessToken: config.channelAccessToken,
        },
        media,
        signal,
      ),

    health: () =>
      ingress === null
        ? { ready: false, detail: 'not running (before start or after stop)' }
        : { ready: true },
  };
}
