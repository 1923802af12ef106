import { type ChannelProbeOptions, probePlatform, requestPlatform } from '@switchboard/channel-kit';
import type { ProbeResult } from '@switchboard/core';
import type { WhatsAppChannelConfig } from './options.js';

/** Graph's code for an access token it cannot use (expired, revoked, malformed), whatever the status. */
const INVALID_TOKEN_CODE = 190;

/**
 * The read-only check of a WhatsApp channel (`switchboard doctor`): `GET /{version}/{phone_number_id}`
 * with the access token, which also proves the token may use that number.
 */
export function probeWhatsAppChannel(
  config: WhatsAppChannelConfig,
  { configPath, timeoutMs }: ChannelProbeOptions,
): Promise<ProbeResult> {
  const target = {
    platform: 'WhatsApp',
    apiUrl: config.apiUrl,
    credential: 'the access token',
    credentialPath: `${configPath}.access_token`,
    kindOf: ({ code }: { code?: string | number }) =>
      Number(code) === INVALID_TOKEN_CODE ? ('auth' as const) : undefined,
  };
  return probePlatform(target, async () => {
    const number = (await requestPlatform({
      where: { type: 'whatsapp', channelId: config.id, call: 'GET /{phone_number_id}' },
      method: 'GET',
      url: `${config.apiUrl}/${config.apiVersion}/${config.phoneNumberId}`,
      headers: { authorization: `Bearer ${config.accessToken}` },
      timeoutMs,
      secrets: [config.accessToken],
    })) as { display_phone_number?: string; verified_name?: string } | undefined;
    return {
      level: 'ok',
      detail: `WhatsApp number ${number?.display_phone_number ?? config.phoneNumberId} (${number?.verified_name ?? 'no verified name'})`,
    };
  });
}
