import { type ChannelProbeOptions, probePlatform, requestPlatform } from '@switchboard/channel-kit';
import type { ProbeResult } from '@switchboard/core';
import type { DiscordChannelConfig } from './options.js';

/** The REST base discord.js calls unless `api_url` names another; the version is appended. */
const DISCORD_API_URL = 'https://discord.com/api';

/** The REST version discord.js 14 calls. */
const API_VERSION = 'v10';

/**
 * The read-only check of a Discord channel (`switchboard doctor`): `GET /users/@me` with the bot
 * token, without logging in to the gateway (which would take the bot's session).
 */
export function probeDiscordChannel(
  config: DiscordChannelConfig,
  { configPath, timeoutMs }: ChannelProbeOptions,
): Promise<ProbeResult> {
  const api = (config.apiUrl ?? DISCORD_API_URL).replace(/\/+$/, '');
  const target = {
    platform: 'Discord',
    apiUrl: api,
    credential: 'the bot token',
    credentialPath: `${configPath}.token`,
  };
  return probePlatform(target, async () => {
    const user = (await requestPlatform({
      where: { type: 'discord', channelId: config.id, call: 'GET /users/@me' },
      method: 'GET',
      url: `${api}/${API_VERSION}/users/@me`,
      headers: { authorization: `Bot ${config.token}` },
      timeoutMs,
      secrets: [config.token],
    })) as { username?: string } | undefined;
    return { level: 'ok', detail: `Discord bot ${user?.username ?? '(no username)'}` };
  });
}
