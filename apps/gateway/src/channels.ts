import { type ChannelEvents, createOpenApiChannel } from '@switchboard/channel-openapi';
import type { Config } from '@switchboard/config';
import type {
  ChannelAdapter,
  ChannelPolicy,
  Logger,
  MessageStatusStore,
  OutboundObserver,
  OutboundPolicy,
  RateBuckets,
} from '@switchboard/core';
import type { FastifyInstance } from 'fastify';

/** HTTP callers always address the bot, so nothing is ignored for lack of a mention. */
const OPENAPI_POLICY: ChannelPolicy = {
  admission: { require_mention: false, prefixes: [] },
  sessionScope: 'chat',
};

export interface Channels {
  adapters: Map<string, ChannelAdapter>;
  /** Channel id → how it admits and keys messages. */
  policyOf(channelId: string): ChannelPolicy;
  /** Channel id → how the reply sender sends through it (`channels[].outbound`). */
  outboundPolicies: ReadonlyMap<string, OutboundPolicy>;
  /** Channel id → the least time between two previews (`channels[].outbound.edit_interval`) in ms. */
  editIntervalMsOf(channelId: string): number | undefined;
}

/**
 * Builds every configured channel; webhook channels mount their routes on `server` now. A
 * platform's package (and its library) is imported only when a channel of its type is configured.
 */
export async function createChannels(
  config: Config,
  deps: {
    server: FastifyInstance;
    statuses: MessageStatusStore;
    events: ChannelEvents;
    logger: Logger;
    /** The pacing buckets of the chat channels (`outbound.rate`): shared by replicas on Redis. */
    rateBuckets: RateBuckets;
    /** Told of pacing waits and platform 429s (metrics). */
    outbound: OutboundObserver;
  },
): Promise<Channels> {
  const adapters = new Map<string, ChannelAdapter>();
  const policies = new Map<string, ChannelPolicy>();
  for (const channel of config.channels) {
    // Each adapter names itself in its logger (`component: channel.<type>`, `channel: <id>`).
    const { logger, rateBuckets, outbound: observer } = deps;
    switch (channel.type) {
      case 'openapi':
        policies.set(channel.id, OPENAPI_POLICY);
        adapters.set(
          channel.id,
          createOpenApiChannel({
            config: channel,
            server: deps.server,
            statuses: deps.statuses,
            events: deps.events,
            logger,
          }),
        );
        break;
      case 'telegram': {
        const { createTelegramChannel } = await import('@switchboard/channel-telegram');
        policies.set(channel.id, channel.policy);
        adapters.set(
          channel.id,
          createTelegramChannel({ config: channel, server: deps.server, logger, rateBuckets, observer }),
        );
        break;
      }
      case 'slack': {
        const { createSlackChannel } = await import('@switchboard/channel-slack');
        policies.set(channel.id, channel.policy);
        adapters.set(
          channel.id,
          createSlackChannel({ config: channel, server: deps.server, logger, rateBuckets, observer }),
        );
        break;
      }
      case 'discord': {
        const { createDiscordChannel } = await import('@switchboard/channel-discord');
        policies.set(channel.id, channel.policy);
        adapters.set(channel.id, createDiscordChannel({ config: channel, logger, rateBuckets, observer }));
        break;
      }
      case 'line': {
        const { createLineChannel } = await import('@switchboard/channel-line');
        policies.set(channel.id, channel.policy);
        adapters.set(channel.id, createLineChannel({ config: channel, server: deps.server, logger }));
        break;
      }
      case 'whatsapp': {
        const { createWhatsAppChannel } = await import('@switchboard/channel-whatsapp');
        policies.set(channel.id, channel.policy);
        adapters.set(
          channel.id,
          createWhatsAppChannel({ config: channel, server: deps.server, logger, rateBuckets, observer }),
        );
        break;
      }
      case 'teams': {
        const { createTeamsChannel } = await import('@switchboard/channel-teams');
        policies.set(channel.id, channel.policy);
        adapters.set(
          channel.id,
          createTeamsChannel({ config: channel, server: deps.server, logger, rateBuckets, observer }),
        );
        break;
      }
      case 'feishu': {
        const { createFeishuChannel } = await import('@switchboard/channel-feishu');
        policies.set(channel.id, channel.policy);
        adapters.set(
          channel.id,
          createFeishuChannel({ config: channel, server: deps.server, logger, rateBuckets, observer }),
        );
        break;
      }
    }
  }
  const outbound = new Map(config.channels.map((channel) => [channel.id, channel.outbound]));
  return {
    adapters,
    policyOf: (id) => policies.get(id) ?? OPENAPI_POLICY,
    outboundPolicies: outbound,
    editIntervalMsOf: (id) => outbound.get(id)?.editIntervalMs,
  };
}
