import { silentLogger } from '@switchboard/core';
import {
  type ChannelEngine,
  type ChannelEngineOptions,
  startChannelEngine,
} from '@switchboard/testkit/channel-engine';
import { type FakeLine, startFakeLine } from '@switchboard/testkit/line';
import { createLineChannel } from '../src/channel.js';
import { LineChannelSchema } from '../src/options.js';

export interface LineGateway extends ChannelEngine {
  fake: FakeLine;
  /** `http://127.0.0.1:<port>/line/ln`: the webhook URL. */
  webhookUrl: string;
}

/** The engine's options besides the channel, and the channel's config. */
export interface LineGatewayOptions
  extends Pick<ChannelEngineOptions, 'answer' | 'ingress' | 'wrapIngress' | 'started'> {
  /** `channels[]` keys besides id, type, secrets and api_url. */
  config?: Record<string, unknown>;
}

/**
 * The LINE channel on a real server with the gateway's error answers, in front of the real core
 * engine, its API on the fake LINE: what `switchboard serve` wires, in one process.
 */
export async function startLineGateway(options: LineGatewayOptions = {}): Promise<LineGateway> {
  const fake = await startFakeLine();
  const config = LineChannelSchema.parse({
    id: 'ln',
    type: 'line',
    channel_secret: fake.channelSecret,
    channel_access_token: fake.channelAccessToken,
    api_url: fake.url,
    ...options.config,
  });
  const engine = await startChannelEngine({
    ...options,
    channel: (server) => createLineChannel({ config, server, logger: silentLogger }),
    policy: config.policy,
    outbound: config.outbound,
  });
  return {
    ...engine,
    fake,
    webhookUrl: `${engine.url}/line/ln`,
    async stop() {
      await engine.stop();
      await fake.close();
    },
  };
}
