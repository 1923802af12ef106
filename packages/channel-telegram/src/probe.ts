import { type ChannelProbeOptions, probePlatform, requestPlatform } from '@switchboard/channel-kit';
import type { ProbeResult } from '@switchboard/core';
import type { TelegramChannelConfig } from './options.js';

/** The Bot API root grammY calls unless `api_root` names another. */
export const TELEGRAM_API_ROOT = 'https://api.telegram.org';

/** The parts of getWebhookInfo's answer the probe reads. */
interface WebhookInfo {
  url?: string;
  last_error_date?: number;
  last_error_message?: string;
}

/**
 * The read-only check of a Telegram channel (`switchboard doctor`): getMe with the bot token
 * and, in webhook mode, getWebhookInfo, whose `last_error_message` (Telegram could not deliver
 * to the webhook) fails the check. Sends nothing and changes no webhook.
 */
export function probeTelegramChannel(
  config: TelegramChannelConfig,
  { configPath, timeoutMs }: ChannelProbeOptions,
): Promise<ProbeResult> {
  const root = (config.apiRoot ?? TELEGRAM_API_ROOT).replace(/\/+$/, '');
  const target = {
    platform: 'Telegram',
    apiUrl: root,
    credential: 'the bot token',
    credentialPath: `${configPath}.token`,
    // Telegram answers 404 to a malformed token.
    kindOf: ({ status }: { status?: number }) => (status === 404 ? ('auth' as const) : undefined),
  };
  const call = async <Result>(method: string): Promise<Result | undefined> => {
    const answer = await requestPlatform({
      where: { type: 'telegram', channelId: config.id, call: method },
      url: `${root}/bot${config.token}/${method}`,
      timeoutMs,
      secrets: [config.token],
    });
    return (answer as { result?: Result } | undefined)?.result;
  };
  return probePlatform(target, async () => {
    const me = await call<{ username?: string }>('getMe');
    const bot = `Telegram bot @${me?.username ?? '(no username)'}`;
    if (config.mode !== 'webhook') return { level: 'ok', detail: bot };
    const webhook = (await call<WebhookInfo>('getWebhookInfo')) ?? {};
    if (webhook.last_error_message !== undefined) {
      const at =
        webhook.last_error_date === undefined
          ? ''
          : ` at ${new Date(webhook.last_error_date * 1000).toISOString()}`;
      return {
        level: 'fail',
        detail: `${bot}: the last delivery to ${webhook.url || 'the webhook'} failed${at}: ${webhook.last_error_message}`,
        hint: 'check that the webhook URL reaches this gateway over HTTPS from the internet',
      };
    }
    if (!webhook.url) {
      // With webhook.url the channel registers the webhook at start; without, someone else must.
      return config.webhook?.url === undefined
        ? {
            level: 'fail',
            detail: `${bot}: no webhook is set, so no update arrives`,
            hint: `set ${configPath}.webhook.url, or register the webhook with setWebhook`,
          }
        : { level: 'ok', detail: `${bot}, webhook set at start to ${config.webhook.url}` };
    }
    return { level: 'ok', detail: `${bot}, webhook ${webhook.url}` };
  });
}
