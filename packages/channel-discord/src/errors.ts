import { SwitchboardError } from '@switchboard/core';
import { DiscordAPIError, DiscordjsErrorCodes, HTTPError } from 'discord.js';

/**
 * Discord failures as SwitchboardErrors. Library errors are not kept as `cause`: messages and
 * details are rebuilt from their status, code and text, with the token cut out, so that no log
 * line or HTTP answer can carry it.
 */

/** A failed `POST /channels/:id/messages`, after discord.js has waited out 429s and retried 5xx. */
export function toSendError(error: unknown, channelId: string, token: string): SwitchboardError {
  const details = { channelId };
  if (error instanceof DiscordAPIError) {
    const reason = withoutToken(error.message, token);
    if (error.status === 401) {
      return new SwitchboardError('SB_CHANNEL_AUTH_FAILED', {
        message: `Discord refused the bot token while sending to channel ${channelId}: ${reason}`,
        details: { ...details, status: error.status, discordCode: error.code },
      });
    }
    // 403 (missing permissions), 404 (unknown channel), 400 (invalid body): the same call fails again.
    return new SwitchboardError('SB_CHANNEL_SEND_FAILED', {
      message: `Discord refused the message for channel ${channelId}: ${reason} (HTTP ${error.status})`,
      details: { ...details, status: error.status, discordCode: error.code },
    });
  }
  if (error instanceof HTTPError) {
    return new SwitchboardError('SB_CHANNEL_SEND_FAILED', {
      message: `Discord answered HTTP ${error.status} while sending to channel ${channelId}`,
      details: { ...details, status: error.status },
      retryable: true,
    });
  }
  return new SwitchboardError('SB_CHANNEL_SEND_FAILED', {
    message: `could not reach Discord while sending to channel ${channelId}: ${describe(error, token)}`,
    details,
    retryable: true,
  });
}

/** A failed login: a refused token or intent is the user's to fix, anything else may pass. */
export function toStartError(error: unknown, channelId: string, token: string): SwitchboardError {
  const reason = describe(error, token);
  const code = error instanceof Error && 'code' in error ? error.code : undefined;
  if (code === DiscordjsErrorCodes.TokenInvalid || reason === 'Authentication failed') {
    return new SwitchboardError('SB_CHANNEL_AUTH_FAILED', {
      message: `channels[${channelId}].token: Discord refused the bot token`,
      details: { channel: channelId },
    });
  }
  if (reason === 'Used disallowed intents') {
    // The Message Content intent is privileged: the application owner switches it on.
    return new SwitchboardError('SB_CHANNEL_AUTH_FAILED', {
      message: `channels[${channelId}]: Discord refused the Message Content intent; enable it under Bot → Privileged Gateway Intents in the Developer Portal`,
      details: { channel: channelId },
    });
  }
  return new SwitchboardError('SB_CHANNEL_UNREACHABLE', {
    message: `channels[${channelId}]: could not connect to the Discord gateway: ${reason}`,
    details: { channel: channelId },
    retryable: true,
  });
}

function describe(error: unknown, token: string): string {
  const text = error instanceof Error ? error.message : String(error);
  return withoutToken(text, token);
}

function withoutToken(text: string, token: string): string {
  return token === '' ? text : text.replaceAll(token, '[redacted]');
}
