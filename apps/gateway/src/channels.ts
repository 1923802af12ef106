import { type OwnedChannels, ownChannels, webhookPath } from '@switchboard/channel-kit';
import { type ChannelEvents, createOpenApiChannel } from '@switchboard/channel-openapi';
import type { Config } from '@switchboard/config';
import {
  type ChannelAdapter,
  type ChannelContext,
  type ChannelLeases,
  type ChannelPolicy,
  type Logger,
  type MessageStatusStore,
  type OutboundObserver,
  type OutboundPolicy,
  type RateBuckets,
  SwitchboardError,
} from '@switchboard/core';
import type { FastifyInstance } from 'fastify';
import { CHANNEL_LEASE_TIMING } from './channel-lease-timing.js';
import type { ChannelApps } from './http/channel-apps.js';

/** HTTP callers always address the bot, so nothing is ignored for lack of a mention. */
const OPENAPI_POLICY: ChannelPolicy = {
  admission: { require_mention: false, prefixes: [] },
  sessionScope: 'chat',
};

type ChannelConfig = Config['channels'][number];

/** The channels in force on this replica: built at start, added, replaced or removed by a reload. */
export interface Channels {
  /** Channel id → the adapter to use (single-owner ones behind their leases). */
  adapters: ReadonlyMap<string, ChannelAdapter>;
  ownership: OwnedChannels;
  /** Channel id → how it admits and keys messages. */
  policyOf(channelId: string): ChannelPolicy;
  /** Channel id → how the reply sender sends through it (`channels[].outbound`). */
  outboundPolicies: ReadonlyMap<string, OutboundPolicy>;
  /** Channel id → the least time between two previews (`channels[].outbound.edit_interval`) in ms. */
  editIntervalMsOf(channelId: string): number | undefined;
  /** Channel id → whether it shows the bot typing while a turn runs (`channels[].outbound.typing`). */
  typingOf(channelId: string): boolean;
  /** The configurations of the channels in force. */
  configs(): ChannelConfig[];
  /** The ids of the HTTP (`openapi`) channels. */
  httpChannels: ReadonlySet<string>;
  /** Starts every channel and serves its routes; `recovered` goes to each channel by id. */
  start(context: ChannelContext): Promise<void>;
  /**
   * Builds `channel` anew and puts it in place of the channel of its id, if any, without a gap
   * for webhooks: the new one is started and serves the routes before the old one is drained and
   * stopped. A single-owner connection is handed over: the old one stops and releases its lease
   * first, so that two never poll at once. A new one that fails to start is stopped and the
   * failure thrown; what was in force comes back (started again if it was handed over).
   * Puts, removes and `stop` run one after the other; after `drain` or `stop`, SB_DRAINING.
   */
  put(channel: ChannelConfig): Promise<void>;
  /** Stops serving channel `id` (its routes answer 404), drains and stops it. */
  remove(id: string): Promise<void>;
  /** Drains every channel (shutdown began). */
  drain(): void;
  /** Stops every channel and closes its app. */
  stop(): Promise<void>;
}

export interface ChannelDeps {
  /** Where each channel's routes live. */
  apps: ChannelApps;
  statuses: MessageStatusStore;
  events: ChannelEvents;
  logger: Logger;
  /** The pacing buckets of the chat channels (`outbound.rate`): shared by replicas on Redis. */
  rateBuckets: RateBuckets;
  /** Told of pacing waits and platform 429s (metrics). */
  outbound: OutboundObserver;
  /** The deployment's channel leases and this replica's name as their holder. */
  leases: { leases: ChannelLeases; replicaId: string };
}

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

/** The path prefix a channel's routes live under. */
function prefixOf(channel: ChannelConfig): string {
  return channel.type === 'openapi' ? channel.prefix : webhookPath(channel.type, channel.id);
}

/** One channel as built: its adapter (behind its lease where single-owner) and its app. */
interface Built {
  config: ChannelConfig;
  adapter: ChannelAdapter;
  app: FastifyInstance;
}

/**
 * Builds every configured channel, each with its routes in an app of its own. A platform's
 * package (and its library) is imported only when a channel of its type is configured.
 */
export async function createChannels(config: Config, deps: ChannelDeps): Promise<Channels> {
  const { apps, logger } = deps;
  const built = new Map<string, Built>();
  const ownership = ownChannels(new Map(), {
    ...deps.leases,
    logger,
    timing: CHANNEL_LEASE_TIMING,
  });
  const policies = new Map<string, ChannelPolicy>();
  const outbound = new Map<string, ChannelConfig['outbound']>();
  const httpChannels = new Set<string>();
  let context: ChannelContext | undefined;

  /** Builds `channel`'s adapter in a new app; nothing of it serves or runs yet. */
  async function build(channel: ChannelConfig): Promise<{ adapter: ChannelAdapter; app: FastifyInstance }> {
    const app = await apps.create();
    try {
      // Each adapter names itself in its logger (`component: channel.<type>`, `channel: <id>`).
      const adapter =
        channel.type === 'openapi'
          ? createOpenApiChannel({
              config: channel,
              server: app,
              statuses: deps.statuses,
              events: deps.events,
              logger,
            })
          : await platformChannel(channel, {
              server: app,
              logger,
              rateBuckets: deps.rateBuckets,
              observer: deps.outbound,
            });
      return { adapter, app };
    } catch (err) {
      await app.close();
      throw err;
    }
  }

  /** Makes `channel` the one in force for its id: policies, outbound, the adapter to use. */
  function register(channel: ChannelConfig, adapter: ChannelAdapter, app: FastifyInstance): Built {
    const entry = { config: channel, adapter: ownership.add(adapter), app };
    built.set(channel.id, entry);
    policies.set(channel.id, channel.type === 'openapi' ? OPENAPI_POLICY : channel.policy);
    outbound.set(channel.id, channel.outbound);
    if (channel.type === 'openapi') httpChannels.add(channel.id);
    else httpChannels.delete(channel.id);
    return entry;
  }

  /** Drains and stops a channel no longer in force, then closes its app. */
  async function retire(entry: Built): Promise<void> {
    entry.adapter.drain?.();
    await entry.adapter.stop();
    await entry.app.close();
  }

  /** Takes channel `id` out of service: its paths answer 404, nothing is sent through it. */
  function forget(id: string): void {
    apps.unmount(id);
    built.delete(id);
    ownership.remove(id);
    policies.delete(id);
    outbound.delete(id);
    httpChannels.delete(id);
  }

  /** Puts, removes and the final stop run one at a time, so that none starts what another stops. */
  let queue: Promise<unknown> = Promise.resolve();
  let stopped = false;
  function serially<Result>(step: () => Promise<Result>): Promise<Result> {
    const run = queue.then(step, step);
    queue = run.catch(() => undefined);
    return run;
  }

  async function putNow(channel: ChannelConfig): Promise<void> {
    if (context === undefined) throw new Error('channels.put() before start()');
    if (stopped) throw new SwitchboardError('SB_DRAINING', { message: 'the gateway is shutting down' });
    const { adapter, app } = await build(channel);
    const previous = built.get(channel.id);
    const handOver = previous?.adapter.singleConsumer === true;
    // Two connections of one token must never run at once: the old one stops (and lets its
    // lease go) before the new one asks for it.
    if (previous !== undefined && handOver) await retire(previous);
    const entry = register(channel, adapter, app);
    try {
      await entry.adapter.start({ ...context, recovered: [] });
    } catch (err) {
      await entry.adapter
        .stop()
        .catch((stopErr: unknown) => logger.warn({ err: stopErr }, 'channel stop failed'));
      await app.close();
      await restore(channel.id, previous, handOver);
      throw err;
    }
    await apps.mount(channel.id, prefixOf(channel), app);
    // Shutdown began while it started: it drains with the others.
    if (stopped) entry.adapter.drain?.();
    if (previous !== undefined && !handOver) await retire(previous);
  }

  /**
   * A new channel failed to start: what was in force comes back. One still running is used again;
   * one handed over (stopped already) is built and started anew; a channel added is taken out.
   */
  async function restore(id: string, previous: Built | undefined, handedOver: boolean): Promise<void> {
    if (previous !== undefined && !handedOver) {
      register(previous.config, previous.adapter, previous.app);
      return;
    }
    forget(id);
    if (previous === undefined) return;
    try {
      await putNow(previous.config);
      logger.warn({ channel: id }, 'the changed channel did not start: the one before it runs again');
    } catch (err) {
      logger.error(
        { err, channel: id },
        'the channel before the change did not start again: the channel is out of service',
      );
    }
  }

  for (const channel of config.channels) {
    const { adapter, app } = await build(channel);
    register(channel, adapter, app);
  }

  return {
    adapters: ownership.adapters,
    ownership,
    policyOf: (id) => policies.get(id) ?? OPENAPI_POLICY,
    outboundPolicies: outbound,
    editIntervalMsOf: (id) => outbound.get(id)?.editIntervalMs,
    typingOf: (id) => outbound.get(id)?.typing ?? false,
    configs: () => [...built.values()].map((entry) => entry.config),
    httpChannels,

    async start(startContext) {
      context = startContext;
      for (const [id, entry] of built) {
        const recovered = (startContext.recovered ?? []).filter((queued) => queued.message.channel === id);
        await entry.adapter.start({ ...startContext, recovered });
        await apps.mount(id, prefixOf(entry.config), entry.app);
      }
    },

    put(channel) {
      return serially(() => putNow(channel));
    },

    remove(id) {
      return serially(async () => {
        const entry = built.get(id);
        if (entry === undefined) return;
        forget(id);
        await retire(entry);
      });
    },

    drain() {
      stopped = true;
      for (const entry of built.values()) entry.adapter.drain?.();
    },

    stop() {
      stopped = true;
      // After the put or remove under way: a channel it starts is stopped too.
      return serially(async () => {
        for (const entry of built.values()) await entry.adapter.stop();
        await Promise.all([...built.values()].map((entry) => entry.app.close()));
      });
    },
  };
}
