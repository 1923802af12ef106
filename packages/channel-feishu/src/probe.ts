import {
  type ChannelProbeOptions,
  channelFailure,
  probePlatform,
  requestPlatform,
} from '@switchboard/channel-kit';
import type { ProbeResult } from '@switchboard/core';
import type { FeishuChannelConfig } from './options.js';
import { type OpenApiAnswer, answerFailure } from './outbound/open-api.js';

/**
 * The read-only check of a Feishu / Lark channel (`switchboard doctor`): a tenant access token
 * (`POST /open-apis/auth/v3/tenant_access_token/internal`) for the app id and secret. The open
 * platform answers a refused secret with HTTP 200 and a non-zero `code`.
 */
export function probeFeishuChannel(
  config: FeishuChannelConfig,
  { configPath, timeoutMs }: ChannelProbeOptions,
): Promise<ProbeResult> {
  const where = { type: 'feishu', channelId: config.id, call: 'tenant_access_token/internal' };
  const secrets = [config.appSecret];
  const target = {
    platform: 'Feishu',
    apiUrl: config.apiUrl,
    credential: 'the app id and secret',
    credentialPath: `${configPath}.app_secret`,
  };
  return probePlatform(target, async () => {
    const answer = ((await requestPlatform({
      where,
      url: `${config.apiUrl}/open-apis/auth/v3/tenant_access_token/internal`,
      body: { app_id: config.appId, app_secret: config.appSecret },
      timeoutMs,
      secrets,
    })) ?? {}) as OpenApiAnswer;
    if (answer.code !== 0) throw channelFailure(where, answerFailure(answer), { secrets });
    return { level: 'ok', detail: `Feishu app ${config.appId}: a tenant access token was issued` };
  });
}
