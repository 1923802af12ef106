import {
  ACKNOWLEDGED,
  type Disposition,
  type PacingOptions,
  channelPacing,
  deliveryKey,
  dispositionOf,
  mountWebhook,
  sendParts,
  showPreview,
  webhookPath,
} from '@switchboard/channel-kit';
import {
  type ChannelAdapter,
  type Ingress,
  type Logger,
  SwitchboardError,
  isSwitchboardError,
  newMessageId,
} from '@switchboard/core';
import type { FastifyInstance } from 'fastify';
import type { FeishuChannelConfig } from './options.js';
import { createLongConnection } from './inbound/long-connection.js';
import { normalizeFeishuEvent } from './inbound/normalize.js';
import { openFeishuMedia } from './inbound/open-media.js';
import { type FeishuBody, openFeishuBody } from './inbound/open-body.js';
import { verifyFeishuCall } from './inbound/verify.js';
import { createEditCounts } from './outbound/edit-counts.js';
import { createFeishuApi } from './outbound/open-api.js';
import { feishuMessageCalls, renderFeishuReplies } from './outbound/send.js';

/** Options of `createFeishuChannel`. */
export interface FeishuChannelOptions extends PacingOptions {
  /** The parsed `channels[]` entry of `type: feishu`. */
  config: FeishuChannelConfig;
  /** The gateway's HTTP server: in webhook mode the event webhook is mounted at `/feishu/<channel id>` at once. */
  server: FastifyInstance;
  logger: Logger;
  /**
   * Websocket mode: how long after a ping the long connection waits for any frame before it
   * takes the connection for dead and opens another; shorter than Feishu's ping interval (120 s),
   * as each ping starts the wait anew. Default: 30 s.
   */
  pingTimeoutMs?: number;
  /**
   * Websocket mode: how long after the SDK gave up on the long connection (the endpoint refused
   * the app, reconnects ran out) it is started again. Default: 60 s.
   */
  restartAfterFailureMs?: number;
  /** Clock, ms since the epoch. Default: `Date.now`. */
  now?: () => number;
}

// Feishu pongs at once; a connection silent for 30 s after a ping is one whose far end is gone.
const DEFAULTS = {
  pingTimeoutMs: 30_000,
  restartAfterFailureMs: 60_000,
  now: Date.now,
} satisfies Partial<FeishuChannelOptions>;

/** The v2 event envelope's fields the channel reads. */
interface EventHeader {
  event_id?: unknown;
  event_type?: unknown;
}

/**
 * The Feishu / Lark channel on the official node SDK. `start` learns the bot's open_id (`GET
 * /open-apis/bot/v3/info`, unless configured), which makes mentions of it and its own messages
 * recognisable. In webhook mode events come to `POST /feishu/<channel id>`: signed and encrypted
 * with the encrypt key, or carrying the verification token (`inbound/verify.ts`, 401 otherwise);
 * the console's `url_verification` gets its challenge back. In websocket mode they come over the
 * SDK's long connection (`inbound/long-connection.ts`) and no route is mounted. Either way
 * `im.message.receive_v1` events go to the ingress keyed on their `event_id`, so a redelivery is
 * a duplicate, and are acknowledged only once taken; other events are acknowledged and ignored.
 * Replies use the message reply API with a tenant access token the SDK fetches and renews;
 * streamed previews edit the bot's message, within Feishu's 20 edits of a message
 * (`outbound/send.ts`).
 */
export function createFeishuChannel(options: FeishuChannelOptions): ChannelAdapter {
  const { config } = options;
  const now = options.now ?? DEFAULTS.now;
  const logger = options.logger.child({ component: 'channel.feishu', channel: config.id });
  const path = webhookPath('feishu', config.id);
  const { pacer, observer } = channelPacing(config.id, config.outbound.rate, options);
  const api = createFeishuApi(config, (waitMs) => observer.rateLimited(config.id, waitMs ?? 0));
  const edits = createEditCounts();
  let ingress: Ingress | null = null;
  let botOpenId: string | null = null;

  /**
   * The message of an event, or `null`: a malformed event is logged and acknowledged, as Feishu
   * would only send it again (and a refusal of it would show nowhere).
   */
  function messageOf(event: unknown, eventId: string, openId: string) {
    try {
      return normalizeFeishuEvent(event, {
        channelId: config.id,
        botOpenId: openId,
        messageId: newMessageId(),
        receivedAt: now(),
      });
    } catch (err) {
      if (!isSwitchboardError(err, 'SB_HTTP_BAD_REQUEST') && !isSwitchboardError(err, 'SB_MESSAGE_INVALID'))
        throw err;
      logger.warn({ err, eventId }, 'malformed feishu event skipped');
      return null;
    }
  }

  /** One event body of either mode to the ingress: what Feishu is told. */
  async function take(current: Ingress, openId: string, body: FeishuBody): Promise<Disposition> {
    if (body.type === 'url_verification')
      return { acknowledge: true as const, body: { challenge: body.challenge } };
    const header = (body.header ?? {}) as EventHeader;
    if (header.event_type !== 'im.message.receive_v1' || typeof header.event_id !== 'string') {
      logger.debug({ eventType: header.event_type }, 'feishu event ignored');
      return ACKNOWLEDGED;
    }
    const message = messageOf(body.event, header.event_id, openId);
    if (message === null) return ACKNOWLEDGED;
    return dispositionOf(await current.accept(message, deliveryKey(header.event_id)));
  }

  /** `take` while the channel runs, `null` before start and after stop. */
  function handler() {
    const current = ingress;
    const openId = botOpenId;
    if (current === null || openId === null) return null;
    return (body: FeishuBody) => take(current, openId, body);
  }

  const longConnection =
    config.mode === 'websocket'
      ? createLongConnection({
          config,
          logger,
          pingTimeoutMs: options.pingTimeoutMs ?? DEFAULTS.pingTimeoutMs,
          restartAfterFailureMs: options.restartAfterFailureMs ?? DEFAULTS.restartAfterFailureMs,
          take: (body) => {
            const handle = handler();
            // Between a stop and the socket's close: a 500, and Feishu delivers it again.
            if (handle === null) {
              throw new SwitchboardError('SB_DRAINING', {
                message: `feishu channel "${config.id}" is not running`,
              });
            }
            return handle(body);
          },
        })
      : null;

  if (config.mode === 'webhook') {
    mountWebhook<FeishuBody>(options.server, {
      path,
      name: `feishu channel "${config.id}"`,
      logger,
      verify: (signed) => verifyFeishuCall(signed, { channelId: config.id, ...config }, now()),
      parse: (rawBody) => openFeishuBody(rawBody, config.encryptKey),
      handler,
    });
  }

  async function whoAmI(): Promise<string> {
    if (config.botOpenId !== undefined) return config.botOpenId;
    const answer = await api.call<{ bot?: { open_id?: string } }>(
      'bot.info',
      { method: 'GET', url: '/open-apis/bot/v3/info' },
      AbortSignal.timeout(config.outbound.sendTimeoutMs),
    );
    if (answer.bot?.open_id === undefined) {
      // An app without the bot capability has no bot to answer as.
      throw new SwitchboardError('SB_CHANNEL_SEND_FAILED', {
        message: `feishu channel "${config.id}": bot.info has no open_id; enable the app's bot capability`,
      });
    }
    return answer.bot.open_id;
  }

  return {
    id: config.id,
    type: 'feishu',

    async start(context) {
      botOpenId = await whoAmI();
      ingress = context.ingress;
      longConnection?.start();
      logger.info(
        { mode: config.mode, ...(longConnection === null ? { path } : {}), botOpenId },
        'channel started',
      );
    },

    async stop() {
      ingress = null;
      longConnection?.stop();
      logger.info({}, 'channel stopped');
    },

    async send(origin, replies, signal, sendOptions) {
      const calls = feishuMessageCalls(origin, {
        api,
        pacer,
        signal,
        edits,
        purpose: 'answer',
        allowPrivateUrls: config.outbound.allowPrivateUrls,
        channelId: config.id,
      });
      await sendParts(
        renderFeishuReplies(replies, sendOptions?.turn ?? origin.id),
        calls,
        sendOptions?.draft,
      );
    },

    preview(origin, text, draft, signal) {
      const calls = feishuMessageCalls(origin, {
        api,
        pacer,
        signal,
        edits,
        purpose: 'preview',
        allowPrivateUrls: config.outbound.allowPrivateUrls,
        channelId: config.id,
      });
      return showPreview(renderFeishuReplies([{ text }]), calls, draft);
    },

    openMedia: (media, signal) =>
      openFeishuMedia(
        {
          channelId: config.id,
          apiUrl: config.apiUrl,
          tenantToken: api.tenantToken,
          forgetTenantToken: api.forgetTenantToken,
        },
        media,
        signal,
      ),

    health() {
      if (ingress === null) return { ready: false, detail: 'not running (before start or after stop)' };
      // While the long connection is down no event can arrive: /readyz says so.
      return longConnection?.health() ?? { ready: true };
    },
  };
}
