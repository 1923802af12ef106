import { type ChannelAdapter, type Ingress, type Outcome, silentLogger } from '@switchboard/core';
import { httpErrorHandler } from '@switchboard/http';
import { startChannelEngine } from '@switchboard/testkit/channel-engine';
import { type FakeLine, startFakeLine } from '@switchboard/testkit/line';
import Fastify from 'fastify';
import { createLineChannel } from '../src/channel.js';
import { LineChannelSchema } from '../src/options.js';

export interface LineGateway {
  fake: FakeLine;
  channel: ChannelAdapter;
  /** `http://127.0.0.1:<port>/line/ln`: the webhook URL. */
  webhookUrl: string;
  outcomes: Outcome[];
  stop(): Promise<void>;
}

export interface LineGatewayOptions {
  /** `channels[]` keys besides id, type, secrets and api_url. */
  config?: Record<string, unknown>;
  /** What the pipeline answers to a text. Default: one reply, `echo: <text>`. */
  answer?: (text: string) => string[];
  /** Replaces the engine's ingress (a refusal, a failure). */
  ingress?: Ingress;
  /** Leaves the channel unstarted. */
  started?: boolean;
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
  const server = Fastify();
  server.setErrorHandler(httpErrorHandler);
  const channel = createLineChannel({ config, server, logger: silentLogger });
  const engine = await startChannelEngine({
    channel,
    policy: config.policy,
    outbound: config.outbound,
    ...options,
  });
  const url = await server.listen({ host: '127.0.0.1', port: 0 });
  return {
    fake,
    channel,
    webhookUrl: `${url}/line/ln`,
    outcomes: engine.outcomes,
    async stop() {
      await engine.stop();
      await server.close();
      await fake.close();
    },
  };
}
