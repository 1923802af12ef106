import {
  ACKNOWLEDGED,
  type PacingOptions,
  channelPacing,
  createPostedTexts,
  dispositionOf,
  mountWebhook,
  sendParts,
  showPreview,
  webhookPath,
  refuseAttachments,
} from '@switchboard/channel-kit';
import {
  type ChannelAdapter,
  type InboundMessage,
  type Ingress,
  type Logger,
  newMessageId,
} from '@switchboard/core';
import type { FastifyInstance } from 'fastify';
import type { TeamsChannelConfig } from './options.js';
import { type Activity, parseActivity } from './inbound/activity.js';
import { createTeamsAuthenticator } from './inbound/authenticate.js';
import { normalizeTeamsActivity } from './inbound/normalize.js';
import { openTeamsMedia } from './inbound/open-media.js';
import { createAccessTokens } from './outbound/access-token.js';
import { connectorCalls } from './outbound/connector.js';
import { renderTeamsReplies, teamsAttachmentRefusal } from './outbound/render.js';

/** Options of `createTeamsChannel`. */
export interface TeamsChannelOptions extends PacingOptions {
  /** The parsed `channels[]` entry of `type: teams`. */
  config: TeamsChannelConfig;
  /** The gateway's HTTP server: the messaging endpoint is mounted at `/teams/<channel id>/messages` at once. */
  server: FastifyInstance;
  logger: Logger;
  /** Clock, ms since the epoch. Default: `Date.now`. */
  now?: () => number;
}

const DEFAULTS = { now: Date.now } satisfies Partial<TeamsChannelOptions>;

/**
 * The Microsoft Teams channel (docs/design.md §3 "teams") on the Bot Framework REST API. The
 * Azure Bot's messaging endpoint is `POST /teams/<channel id>/messages`: its JWT is checked
 * before the body is read, its `serviceurl` claim against the activity before the body is parsed
 * (401 otherwise), `message` activities of Teams go to the ingress keyed on
 * conversation and activity id (a redelivery is a duplicate), other activities (and those of
 * other Bot Framework channels, Web Chat…) are acknowledged and ignored; the answer waits for the ingress. Replies go to the activity's `serviceUrl` with a
 * client-credentials token, paced by `outbound.rate`; streamed previews are edited in place. A send
 * tried again skips the parts it posted before (remembered in memory for `outbound.max_age`).
 */
export function createTeamsChannel(options: TeamsChannelOptions): ChannelAdapter {
  const { config } = options;
  const now = options.now ?? DEFAULTS.now;
  const logger = options.logger.child({ component: 'channel.teams', channel: config.id });
  const path = `${webhookPath('teams', config.id)}/messages`;
  const { pacer, observer } = channelPacing(config.id, config.outbound.rate, options);
  const authenticate = createTeamsAuthenticator({
    appId: config.appId,
    openIdMetadataUrl: config.openIdMetadataUrl,
    now,
  });
  const tokens = createAccessTokens({
    channelId: config.id,
    tokenUrl: config.tokenUrl,
    appId: config.appId,
    appPassword: config.appPassword,
    timeoutMs: config.outbound.sendTimeoutMs,
    now,
  });
  // The Bot Connector takes no idempotency key: the parts a send posted are skipped when it is tried again.
  const posted = createPostedTexts({ maxAgeMs: config.outbound.maxAgeMs, now });
  let ingress: Ingress | null = null;

  async function take(current: Ingress, activity: Activity) {
    if ('other' in activity) {
      logger.debug({ type: activity.other, channelId: activity.channelId }, 'teams activity ignored');
      return ACKNOWLEDGED;
    }
    const message = normalizeTeamsActivity(activity.message, {
      channelId: config.id,
      messageId: newMessageId(),
      receivedAt: now(),
    });
    const result = await current.accept(message, message.platform_message_id);
    logger.debug({ messageId: message.id, status: result.status }, 'teams activity accepted');
    return dispositionOf(result);
  }

  mountWebhook<Activity, string>(options.server, {
    path,
    name: `teams channel "${config.id}"`,
    logger,
    authorize: (headers) => authenticate.authorize(headers.authorization),
    verify: ({ rawBody }, claimedServiceUrl) => authenticate.verify(claimedServiceUrl, rawBody),
    parse: parseActivity,
    handler: () => {
      const current = ingress;
      return current === null ? null : (activity) => take(current, activity);
    },
  });

  function calls(origin: InboundMessage, signal: AbortSignal) {
    return connectorCalls(origin, signal, {
      channelId: config.id,
      tokens,
      pacer,
      onRateLimited: (retryAfterMs) => observer.rateLimited(config.id, retryAfterMs),
      timeoutMs: config.outbound.sendTimeoutMs,
    });
  }

  return {
    id: config.id,
    type: 'teams',

    async start(context) {
      // The credentials are checked now, so that a wrong app password stops the start, not a reply.
      await tokens.get();
      ingress = context.ingress;
      logger.info({ path, appId: config.appId }, 'channel started');
    },

    async stop() {
      ingress = null;
      logger.info({}, 'channel stopped');
    },

    async send(origin, replies, signal, sendOptions) {
      refuseAttachments(replies, { type: 'teams', channelId: config.id }, teamsAttachmentRefusal);
      await sendParts(renderTeamsReplies(replies), calls(origin, signal), sendOptions?.draft, {
        posted,
        answering: sendOptions?.turn ?? origin.id,
      });
    },

    preview: (origin, text, draft, signal) =>
      showPreview(renderTeamsReplies([{ text }]), calls(origin, signal), draft),

    openMedia: (media, signal) => openTeamsMedia({ channelId: config.id, tokens }, media, signal),

    health: () =>
      ingress === null
        ? { ready: false, detail: 'not running (before start or after stop)' }
        : { ready: true },
  };
}
