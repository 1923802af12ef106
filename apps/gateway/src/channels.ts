import { type ChannelEvents, createOpenApiChannel } from '@switchboard/channel-openapi';
import { createDiscordChannel } from '@switchboard/channel-discord';
import { createSlackChannel } from '@switchboard/channel-slack';
import { createTelegramChannel } from '@switchboard/channel-telegram';
import type { Config } from '@switchboard/config';
import type {
  ChannelAdapter,
  ChannelPolicy,
  Logger,
  MessageStatusStore,
  OutboundObserver,
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
  /** Channel id → the deadline of one send (`channels[].outbound.send_timeout`) in ms; undefined if unknown. */
  sendTimeoutMsOf(channelId: string): number | undefined;
}

/** Builds every configured channel; webhook channels mount their routes on `server` now. */
export function createChannels(
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
): Channels {
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
      case 'telegram':
        policies.set(channel.id, channel.policy);
        adapters.set(
          channel.id,
          createTelegramChannel({ config: channel, server: deps.server, logger, rateBuckets, observer }),
        );
        break;
      case 'slack':
        policies.set(channel.id, channel.policy);
        adapters.set(
          channel.id,
          createSlackChannel({ config: channel, server: deps.server, logger, rateBuckets, observer }),
        );
        break;
      case 'discord':
        policies.set(channel.id, channel.policy);
        adapters.set(channel.id, createDiscordChannel({ config: channel, logger, rateBuckets, observer }));
        break;
    }
  }
  const sendTimeoutsMs = new Map(
    config.channels.map((channel) => [channel.id, channel.outbound.sendTimeoutMs]),
  );
  return {
    adapters,
    policyOf: (id) => policies.get(id) ?? OPENAPI_POLICY,
    sendTimeoutMsOf: (id) => sendTimeoutsMs.get(id),
  };
}
