import type { ChannelProbeOptions } from '@switchboard/channel-kit';
import type { Config } from '@switchboard/config';
import type { ProbeResult } from '@switchboard/core';

type ChannelConfig = Config['channels'][number];

/**
 * The read-only check of one configured channel (`switchboard doctor`), by its own package's
 * probe: a platform's package (and its library) is imported only when a channel of its type is
 * configured, as `createChannels` does. The HTTP channel calls nothing remote.
 */
export async function probeChannel(
  channel: ChannelConfig,
  options: ChannelProbeOptions,
): Promise<ProbeResult> {
  switch (channel.type) {
    case 'openapi':
      return { level: 'ok', detail: 'HTTP channel: served by this gateway, nothing remote to check' };
    case 'telegram':
      return (await import('@switchboard/channel-telegram')).probeTelegramChannel(channel, options);
    case 'slack':
      return (await import('@switchboard/channel-slack')).probeSlackChannel(channel, options);
    case 'discord':
      return (await import('@switchboard/channel-discord')).probeDiscordChannel(channel, options);
    case 'line':
      return (await import('@switchboard/channel-line')).probeLineChannel(channel, options);
    case 'whatsapp':
      return (await import('@switchboard/channel-whatsapp')).probeWhatsAppChannel(channel, options);
    case 'teams':
      return (await import('@switchboard/channel-teams')).probeTeamsChannel(channel, options);
    case 'feishu':
      return (await import('@switchboard/channel-feishu')).probeFeishuChannel(channel, options);
  }
}
