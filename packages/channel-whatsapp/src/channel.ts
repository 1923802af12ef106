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

/**
 * The WhatsApp channel (Business Cloud API; Meta ships no Node SDK) on channel-kit. Meta verifies
 * the callback URL with `GET /whatsapp/<channel id>` (`hub.challenge` echoed when
 * `hub.verify_token` matches, 403 otherwise) and posts notifications there, signed:
 * `X-Hub-Signature-256` is checked before anything parses the body (401). Each message of the
 * configured phone number (text, media, a location, a tapped reply: `inbound/normalize.ts`) goes
 * to the ingress in order, keyed on its `wamid`, so a redelivered one is a duplicate; other kinds
 * and delivery statuses are acknowledged and skipped.
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
      accessToken: config.accessToken,
      timeoutMs: config.outbound.sendTimeoutMs,
    },
    pacer,
    observer,
  );
  let ingress: Ingress | null = null;

  /** Takes one message to the ingress; what Meta is told if it must deliver the notification again. */
  async function take(current: Ingress, change: MessagesChange, raw: unknown): Promise<Disposition> {
    let message: InboundMessage | null;
    try {
      const context = {
        channelId: config.id,
        names: change.names,
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
      return async (changes) => {
        for (const change of changes) {
          // One app's webhook carries every phone number of its business accounts.
          if (change.phoneNumberId !== config.phoneNumberId) continue;
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
    return reply.code(200).type('text/plain; charset=utf-8').send(answer.challenge);
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

    send: (origin, replies, signal) => send(origin, replies, signal),

    health: () =>
      ingress === null
        ? { ready: false, detail: 'not running (before start or after stop)' }
        : { ready: true },
  };
}
