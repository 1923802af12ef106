import { type Logger, silentLogger } from '@switchboard/core';
import {
  type ChannelEngine,
  type ChannelEngineOptions,
  startChannelEngine,
} from '@switchboard/testkit/channel-engine';
import { type FakeFeishu, type FakeFeishuOptions, startFakeFeishu } from '@switchboard/testkit/feishu';
import { createFeishuChannel } from '../src/channel.js';
import { FeishuChannelSchema } from '../src/options.js';

export interface FeishuGateway extends ChannelEngine {
  fake: FakeFeishu;
  /** `http://127.0.0.1:<port>/feishu/fs`: the webhook URL. */
  webhookUrl: string;
}

/** The engine's options besides the channel, and the channel's config. */
export interface FeishuGatewayOptions
  extends Pick<ChannelEngineOptions, 'answer' | 'ingress' | 'wrapIngress' | 'started'> {
  /** Options of the fake platform (plain events, another secret). */
  fake?: FakeFeishuOptions;
  /** `channels[]` keys besides id, type, credentials and domain. */
  config?: Record<string, unknown>;
  /** The channel's `pingTimeoutMs` (websocket mode). */
  pingTimeoutMs?: number;
  /** The channel's logger. Default: silent. */
  logger?: Logger;
  /** The channel's `restartAfterFailureMs` (websocket mode). */
  restartAfterFailureMs?: number;
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
  const engine = await startChannelEngine({
    ...options,
    channel: (server) =>
      createFeishuChannel({
        config,
        server,
        logger: options.logger ?? silentLogger,
        ...(options.pingTimeoutMs === undefined ? {} : { pingTimeoutMs: options.pingTimeoutMs }),
        ...(options.restartAfterFailureMs === undefined
          ? {}
          : { restartAfterFailureMs: options.restartAfterFailureMs }),
      }),
    policy: config.policy,
    outbound: config.outbound,
  });
  return {
    ...engine,
    fake,
    webhookUrl: `${engine.url}/feishu/fs`,
    async stop() {
      await engine.stop();
      await fake.close();
    },
  };
}
