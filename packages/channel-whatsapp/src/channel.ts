import {
  ACKNOWLEDGED,
  type Disposition,
  type PacingOptions,
  channelPacing,
  createRefusalLog,
  deliveryKey,
  dispositionOf,
  mountWebhook,
  webhookPath,
} from '@switchboard/channel-kit';
import {
  type ChannelAdapter,
  type InboundMessage,
  type Ingress,
  type Logger,
  SwitchboardError,
  isSwitchboardError,
  newMessageId,
} from '@switchboard/core';
import type { FastifyInstance } from 'fastify';
import type { WhatsAppChannelConfig } from './options.js';
import { normalizeWhatsAppMessage } from './inbound/normalize.js';
import { openWhatsAppMedia } from './inbound/open-media.js';
import { type MessagesChange, parseNotification } from './inbound/parse-notification.js';
import { type SubscriptionQuery, answerSubscription, verifyWhatsAppSignature } from './inbound/verify.js';
import { createWhatsAppSender } from './outbound/send.js';

/** Options of `createWhatsAppChannel`. */
export interface WhatsAppChannelOptions extends PacingOptions {
  /** The parsed `channels[]` entry of `type: whatsapp`. */
  config: WhatsAppChannelConfig;
  /** The gateway's HTTP server: the webhook is mounted at `/whatsapp/<channel id>` at once. */
  server: FastifyInstance;
  logger: Logger;
  /** Clock, ms since the epoch. Default: `Date.now`. */
  now?: () => number;
}

const DEFAULTS = { now: Date.now } satisfies Partial<WhatsAppChannelOptions>;

/** The shortest gap between two warnings about one other phone number id's messages. */
const OTHER_NUMBER_WARNING_INTERVAL_MS = 60_000;

/**
 * The WhatsApp channel (Business Cloud API; Meta ships no Node SDK) on channel-kit. Meta verifies
 * the callback URL with `GET /whatsapp/<channel id>` (`hub.challenge` echoed when
 * `hub.verify_token` matches, 403 otherwise) and posts notifications there, signed:
 * `X-Hub-Signature-256` is checked before anything parses the body (401). Each message of the
 * configured phone number (text, media, a location, a tapped reply: `inbound/normalize.ts`) goes
 * to the ingress in order, keyed on its `wamid`, so a redelivered one is a duplicate; other kinds
 * and delivery statuses are acknowledged and skipped, and so are the messages of another phone
 * number and a malformed change, with a warning.
 * Meta retries anything but a 2xx for days, so a malformed body is answered 200 with a warning;
 * a message the gateway cannot take now is answered 503 so that Meta delivers it again.
 * Sending: `outbound/send.ts`.
 */
export function createWhatsAppChannel(options: WhatsAppChannelOptions): ChannelAdapter {
  const { config } = options;
  const now = options.now ?? DEFAULTS.now;
  const logger = options.logger.child({ component: 'channel.whatsapp', channel: config.id });
  const path = webhookPath('whatsapp', config.id);
  const { pacer, observer } = channelPacing(config.id, config.outbound.rate, options);
  const send = createWhatsAppSender(
    {
      channelId: config.id,
      messagesUrl: `${config.apiUrl}/${config.apiVersion}/${config.phoneNumberId}/messages`,
      mediaUrl: `${config.apiUrl}/${config.apiVersion}/${config.phoneNumberId}/media`,
      accessToken: config.accessToken,
      timeoutMs: config.outbound.sendTimeoutMs,
      maxAgeMs: config.outbound.maxAgeMs,
      now,
    },
    pacer,
    observer,
  );
  let ingress: Ingress | null = null;

  /** Per other phone number id: when its skipped messages were last warned about, and how many since. */
  const otherNumbers = new Map<string, { warnedAtMs: number; skipped: number }>();
  /**
   * Meta posts the messages of every number of an app to the app's one callback URL, so another
   * number's messages come here and are lost to it: warned about once a minute per number id (the
   * ids come from signed notifications, so they are the app's own few numbers).
   */
  function noteOtherNumber(change: MessagesChange): void {
    if (change.messages.length === 0) return;
    const atMs = now();
    const seen = otherNumbers.get(change.phoneNumberId) ?? { warnedAtMs: -Infinity, skipped: 0 };
    seen.skipped += change.messages.length;
    otherNumbers.set(change.phoneNumberId, seen);
    if (atMs - seen.warnedAtMs < OTHER_NUMBER_WARNING_INTERVAL_MS) return;
    logger.warn(
      { phoneNumberId: change.phoneNumberId, skipped: seen.skipped },
      'messages for another phone number id skipped',
    );
    seen.warnedAtMs = atMs;
    seen.skipped = 0;
  }

  /** Takes one message to the ingress; what Meta is told if it must deliver the notification again. */
  async function take(current: Ingress, change: MessagesChange, raw: unknown): Promise<Disposition> {
    let message: InboundMessage | null;
    try {
      const context = {
        channelId: config.id,
        names: change.names,
        businessNumber: change.businessNumber,
        messageId: newMessageId(),
        receivedAt: now(),
      };
      message = normalizeWhatsAppMessage(raw, context);
    } catch (err) {
      if (!isSwitchboardError(err, 'SB_HTTP_BAD_REQUEST') && !isSwitchboardError(err, 'SB_MESSAGE_INVALID'))
        throw err;
      logger.warn({ err }, 'malformed whatsapp message skipped');
      return ACKNOWLEDGED;
    }
    if (message === null) {
      logger.debug({ type: (raw as { type?: unknown }).type }, 'whatsapp message kind skipped');
      return ACKNOWLEDGED;
    }
    const result = await current.accept(message, deliveryKey(message.platform_message_id));
    return dispositionOf(result);
  }

  mountWebhook(options.server, {
    path,
    name: `whatsapp channel "${config.id}"`,
    logger,
    verify: ({ headers, rawBody }) => {
      const header = headers['x-hub-signature-256'];
      const signature = typeof header === 'string' ? header : undefined;
      return verifyWhatsAppSignature(config.appSecret, rawBody, signature)
        ? null
        : `x-hub-signature-256: missing or not made with channels[${config.id}].app_secret`;
    },
    parse: parseNotification,
    // Meta redelivers anything not answered 2xx for days, and a malformed body would stay so.
    malformed: 'acknowledge',
    handler: () => {
      const current = ingress;
      if (current === null) return null;
      return async ({ changes, skipped }) => {
        for (const problem of skipped) logger.warn({ problem }, 'malformed whatsapp change skipped');
        for (const change of changes) {
          if (change.phoneNumberId !== config.phoneNumberId) {
            noteOtherNumber(change);
            continue;
          }
          for (const raw of change.messages) {
            const disposition = await take(current, change, raw);
            // Meta delivers the notification again; the messages taken already are duplicates then.
            if (!disposition.acknowledge) return disposition;
          }
        }
        return ACKNOWLEDGED;
      };
    },
  });

  const noteRefusal = createRefusalLog({ logger: logger.child({ route: path }), now });
  options.server.get(path, async (request, reply) => {
    const answer = answerSubscription(request.query as SubscriptionQuery, config.verifyToken);
    if ('problem' in answer) {
      noteRefusal({ problem: answer.problem });
      // The gateway's error handler answers it: 403 in the one error shape.
      throw new SwitchboardError('SB_HTTP_FORBIDDEN', { message: answer.problem });
    }
    logger.info({}, 'webhook subscription verified');
    return reply
      .code(200)
      .type('text/plain; charset=utf-8')
      .header('x-content-type-options', 'nosniff')
      .send(answer.challenge);
  });

  return {
    id: config.id,
    type: 'whatsapp',

    async start(context) {
      ingress = context.ingress;
      logger.info({ path, phoneNumberId: config.phoneNumberId }, 'channel started');
    },

    async stop() {
      ingress = null;
      logger.info({}, 'channel stopped');
    },

    async send(origin, replies, signal, sendOptions) {
      await send(origin, replies, signal, sendOptions?.turn ?? origin.id);
    },

    openMedia: (media, signal) =>
      openWhatsAppMedia(
        {
          channelId: config.id,
          apiUrl: config.apiUrl,
          apiVersion: config.apiVersion,
          accessToken: config.accessToken,
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
