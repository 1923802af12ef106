import { type Logger, silentLogger } from '@switchboard/core';
import {
  type ChannelEngine,
  type ChannelEngineOptions,
  startChannelEngine,
} from '@switchboard/testkit/channel-engine';
import { type FakeWhatsApp, startFakeWhatsApp } from '@switchboard/testkit/whatsapp';
import { createWhatsAppChannel } from '../src/channel.js';
import { WhatsAppChannelSchema } from '../src/options.js';

export interface WhatsAppGateway extends ChannelEngine {
  fake: FakeWhatsApp;
  /** `http://127.0.0.1:<port>/whatsapp/wa`: the callback URL. */
  webhookUrl: string;
}

/** The engine's options besides the channel, and the channel's config, logger and clock. */
export interface WhatsAppGatewayOptions extends Pick<ChannelEngineOptions, 'answer' | 'ingress'> {
  /** `channels[]` keys besides id, type, secrets and api_url. */
  config?: Record<string, unknown>;
  logger?: Logger;
  /** The channel's clock. Default: `Date.now`. */
  now?: () => number;
}

/** Pacing off: these tests are about the calls, not the Cloud API's pair rate. */
const UNPACED = { rate: { enabled: false } };

/**
 * The WhatsApp channel on a real server with the gateway's error answers, in front of the real
 * core engine, its API on the fake Cloud API: what `switchboard serve` wires, in one process.
 */
export async function startWhatsAppGateway(options: WhatsAppGatewayOptions = {}): Promise<WhatsAppGateway> {
  const fake = await startFakeWhatsApp();
  const config = WhatsAppChannelSchema.parse({
    id: 'wa',
    type: 'whatsapp',
    phone_number_id: fake.phoneNumberId,
    access_token: fake.accessToken,
    app_secret: fake.appSecret,
    verify_token: fake.verifyToken,
    api_url: fake.url,
    outbound: UNPACED,
    ...options.config,
  });
  const { logger = silentLogger, now, config: _config, ...engineOptions } = options;
  const engine = await startChannelEngine({
    ...engineOptions,
    channel: (server) =>
      createWhatsAppChannel({ config, server, logger, ...(now === undefined ? {} : { now }) }),
    policy: config.policy,
    outbound: config.outbound,
  });
  return {
    ...engine,
    fake,
    webhookUrl: `${engine.url}/whatsapp/wa`,
    async stop() {
      await engine.stop();
      await fake.close();
    },
  };
}
