import { type ChannelProbeOptions, probePlatform } from '@switchboard/channel-kit';
import type { ProbeResult } from '@switchboard/core';
import type { TeamsChannelConfig } from './options.js';
import { createAccessTokens } from './outbound/access-token.js';

/**
 * The read-only check of a Teams channel (`switchboard doctor`): a Bot Connector token fetched
 * from the configured token endpoint with the app id and password, as the channel does before
 * its first reply.
 */
export function probeTeamsChannel(
  config: TeamsChannelConfig,
  { configPath, timeoutMs }: ChannelProbeOptions,
): Promise<ProbeResult> {
  const target = {
    platform: 'Microsoft Entra',
    apiUrl: config.tokenUrl,
    credential: `the app id and password`,
    credentialPath: `${configPath}.app_password`,
  };
  return probePlatform(target, async () => {
    const tokens = createAccessTokens({
      channelId: config.id,
      tokenUrl: config.tokenUrl,
      appId: config.appId,
      appPassword: config.appPassword,
      timeoutMs,
      now: Date.now,
    });
    await tokens.get();
    return { level: 'ok', detail: `Teams bot ${config.appId}: a Bot Connector token was issued` };
  });
}
