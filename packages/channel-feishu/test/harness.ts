import { type ChannelAdapter, type Ingress, type Outcome, silentLogger } from '@switchboard/core';
import { httpErrorHandler } from '@switchboard/http';
import { startChannelEngine } from '@switchboard/testkit/channel-engine';
import { type FakeFeishu, type FakeFeishuOptions, startFakeFeishu } from '@switchboard/testkit/feishu';
import Fastify from 'fastify';
import { createFeishuChannel } from '../src/channel.js';
import { FeishuChannelSchema } from '../src/options.js';

export interface FeishuGateway {
  fake: FakeFeishu;
  channel: ChannelAdapter;
  /** `http://127.0.0.1:<port>/feishu/fs`: the webhook URL. */
  webhookUrl: string;
  outcomes: Outcome[];
  stop(): Promise<void>;
}

export interface FeishuGatewayOptions {
  /** Options of the fake platform (plain events, another secret). */
  fake?: FakeFeishuOptions;
  /** `channels[]` keys besides id, type, credentials and domain. */
  config?: Record<string, unknown>;
  /** What the pipeline answers to a text. Default: one reply, `echo: <text>`. */
  answer?: (text: string) => string[];
  /** Replaces the engine's ingress (a refusal, a failure). */
  ingress?: Ingress;
  /** Leaves the channel unstarted. */
  started?: boolean;
}

/**
 * The Feishu channel on a real server with the gateway's error answers, in front of the real
 * core engine, its API on the fake open platform: what `switchboard serve` wires, in one process.
 */
export async function startFeishuGateway(options: FeishuGatewayOptions = {}): Promise<FeishuGateway> {
  const fake = await startFakeFeishu(options.fake);
  const config = FeishuChannelSchema.parse({
    id: 'fs',
    type: 'feishu',
    app_id: fake.appId,
    app_secret: fake.appSecret,
    domain: fake.url,
    ...(fake.encryptKey === null ? {} : { encrypt_key: fake.encryptKey }),
    verification_token: fake.verificationToken,
    ...options.config,
  });
  const server = Fastify();
  server.setErrorHandler(httpErrorHandler);
  const channel = createFeishuChannel({ config, server, logger: silentLogger });
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
    webhookUrl: `${url}/feishu/fs`,
    outcomes: engine.outcomes,
    async stop() {
      await engine.stop();
      await server.close();
      await fake.close();
    },
  };
}
