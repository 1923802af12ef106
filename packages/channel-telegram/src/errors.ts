import { type PlatformFailure, channelFailure, networkReasonOf } from '@switchboard/channel-kit';
import type { SwitchboardError } from '@switchboard/core';
import { GrammyError, HttpError } from 'grammy';

/** A Bot API call, for its error: which channel, which method, and the token to keep out of it. */
export interface BotApiCall {
  /** The configured channel id. */
  channelId: string;
  /** The Bot API method, e.g. `sendMessage`. */
  method: string;
  token: string;
}

/** A 429's `retry_after` (seconds) in ms; Telegram always names one, 1 s stands in when it does not. */
export function retryAfterMsOf(parameters: { retry_after?: number } | undefined): number {
  return (parameters?.retry_after ?? 1) * 1000;
}

/**
 * What a failed Bot API call says, for the shared mapping. Telegram answers 404 for a malformed
 * token (auth, like 401) and 403 for a user who blocked the bot or a chat it left (refused, not a
 * credential problem). A network error keeps only its system code: its message holds the request
 * URL, and so the token.
 */
export function failureOf(error: unknown): PlatformFailure {
  if (error instanceof GrammyError) {
    const status = error.error_code;
    return {
      status,
      description: error.description,
      ...(status === 429 ? { retryAfterMs: retryAfterMsOf(error.parameters) } : {}),
      ...(status === 404 ? { kind: 'auth' as const } : status === 403 ? { kind: 'refused' as const } : {}),
    };
  }
  if (error instanceof HttpError) return { network: networkReasonOf(error.error) };
  return { description: error instanceof Error ? error.name : 'unknown error' };
}

/** A failed Bot API call as an SB_CHANNEL_* error (`channelFailure`), without the token. */
export function toChannelError(error: unknown, call: BotApiCall): SwitchboardError {
  return channelFailure(
    { type: 'telegram', channelId: call.channelId, call: call.method },
    failureOf(error),
    {
      secrets: [call.token],
      credentialPath: `channels[${call.channelId}].token`,
    },
  );
}
