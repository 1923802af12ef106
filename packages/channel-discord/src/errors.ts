import { type PlatformFailure, channelFailure, networkReasonOf, redact } from '@switchboard/channel-kit';
import { SwitchboardError } from '@switchboard/core';
import { DiscordAPIError, DiscordjsErrorCodes, HTTPError } from 'discord.js';

/**
 * Discord failures as SwitchboardErrors. Library errors are not kept as `cause`: messages and
 * details are rebuilt from their status, code and text, with the token masked, so that no log
 * line or HTTP answer can carry it.
 */

/** A REST call, for its error: which channel, which route, and the token to keep out of it. */
export interface RestCall {
  /** The configured channel id. */
  channelId: string;
  /** The method and route, e.g. `POST /channels/600/messages`. */
  call: string;
  token: string;
}

/**
 * What a failed REST call says, for the shared mapping, after discord.js has waited out 429s and
 * retried 5xx and network errors. A 403 is a missing permission in that channel (refused: the
 * same call fails again), not a bad token. No 429 surfaces: the REST queue waits them out (the
 * channel never sets `rejectOnRateLimit`).
 */
export function failureOf(error: unknown): PlatformFailure {
  if (error instanceof DiscordAPIError) {
    return {
      status: error.status,
      code: error.code,
      description: error.message,
      ...(error.status === 403 ? { kind: 'refused' as const } : {}),
    };
  }
  if (error instanceof HTTPError) return { status: error.status };
  return { network: networkReasonOf(error) };
}

/** A failed post or edit as an SB_CHANNEL_* error (`channelFailure`), without the token. */
export function toSendError(error: unknown, call: RestCall): SwitchboardError {
  return channelFailure({ type: 'discord', channelId: call.channelId, call: call.call }, failureOf(error), {
    secrets: [call.token],
    credentialPath: `channels[${call.channelId}].token`,
  });
}

/** A failed login: a refused token or intent is the user's to fix, anything else may pass. */
export function toStartError(error: unknown, channelId: string, token: string): SwitchboardError {
  const reason = redact(error instanceof Error ? error.message : String(error), [token]);
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
