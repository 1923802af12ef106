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
type ChannelConfig = Config['channels'][number];

/** What a platform channel's factory takes besides its config (each takes the parts it uses). */
interface PlatformDeps {
  server: FastifyInstance;
  logger: Logger;
  rateBuckets: RateBuckets;
  observer: OutboundObserver;
}

/**
 * The adapter of a platform channel, its package imported here and only here: one literal
 * `import()` per platform, so the bundle keeps each platform in a chunk of its own.
 */
async function platformChannel(
  channel: Exclude<ChannelConfig, { type: 'openapi' }>,
  deps: PlatformDeps,
): Promise<ChannelAdapter> {
  switch (channel.type) {
    case 'telegram':
      return (await import('@switchboard/channel-telegram')).createTelegramChannel({
        config: channel,
        ...deps,
      });
    case 'slack':
      return (await import('@switchboard/channel-slack')).createSlackChannel({ config: channel, ...deps });
    case 'discord':
      return (await import('@switchboard/channel-discord')).createDiscordChannel({
        config: channel,
        ...deps,
      });
    case 'line':
      return (await import('@switchboard/channel-line')).createLineChannel({ config: channel, ...deps });
    case 'whatsapp':
      return (await import('@switchboard/channel-whatsapp')).createWhatsAppChannel({
        config: channel,
        ...deps,
      });
    case 'teams':
      return (await import('@switchboard/channel-teams')).createTeamsChannel({ config: channel, ...deps });
    case 'feishu':
      return (await import('@switchboard/channel-feishu')).createFeishuChannel({ config: channel, ...deps });
  }
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
  // Each adapter names itself in its logger (`component: channel.<type>`, `channel: <id>`).
  const { server, logger, rateBuckets, outbound: observer } = deps;
  for (const channel of config.channels) {
    if (channel.type === 'openapi') {
      policies.set(channel.id, OPENAPI_POLICY);
      adapters.set(
        channel.id,
        createOpenApiChannel({
          config: channel,
          server,
          statuses: deps.statuses,
          events: deps.events,
          logger,
        }),
      );
      continue;
    }
    policies.set(channel.id, channel.policy);
    adapters.set(channel.id, await platformChannel(channel, { server, logger, rateBuckets, observer }));
  }
  const outbound = new Map(config.channels.map((channel) => [channel.id, channel.outbound]));
  return {
    adapters,
    policyOf: (id) => policies.get(id) ?? OPENAPI_POLICY,
    outboundPolicies: outbound,
    editIntervalMsOf: (id) => outbound.get(id)?.editIntervalMs,
  };
}
