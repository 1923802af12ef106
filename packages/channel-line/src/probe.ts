import { type ChannelProbeOptions, probePlatform } from '@switchboard/channel-kit';
import type { ProbeResult } from '@switchboard/core';
import type { LineChannelConfig } from './options.js';
import { callLine } from './outbound/send.js';

/**
 * The read-only check of a LINE channel (`switchboard doctor`): `GET /v2/bot/info` with the
 * channel access token, as the channel does at start.
 */
export function probeLineChannel(
  config: LineChannelConfig,
  { configPath, timeoutMs }: ChannelProbeOptions,
): Promise<ProbeResult> {
  const apiUrl = config.apiUrl.replace(/\/+$/, '');
  const target = {
    platform: 'LINE',
    apiUrl,
    credential: 'the channel access token',
    credentialPath: `${configPath}.channel_access_token`,
  };
  return probePlatform(target, async () => {
    const api = { channelId: config.id, apiUrl, channelAccessToken: config.channelAccessToken, timeoutMs };
    const bot = (await callLine(api, '/v2/bot/info', { method: 'GET' })) as
      | { displayName?: string; basicId?: string }
      | undefined;
    return { level: 'ok', detail: `LINE bot ${bot?.displayName ?? '?'} (${bot?.basicId ?? 'no basic id'})` };
  });
}
