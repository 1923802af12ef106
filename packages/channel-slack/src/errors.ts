import { webApi } from '@slack/bolt';
import { SwitchboardError } from '@switchboard/core';

/** What a failed Web API call was, for the error message; never the token. */
export interface FailedCall {
  /** The configured channel id. */
  channelId: string;
  /** The Web API method, e.g. `chat.postMessage`. */
  method: string;
}

/** Platform errors that mean the bot token is wrong, revoked or lacks access. */
const AUTH_ERRORS = new Set([
  'not_authed',
  'invalid_auth',
  'account_inactive',
  'token_revoked',
  'token_expired',
  'no_permission',
  'missing_scope',
  'not_allowed_token_type',
]);

/** Platform errors that say Slack itself failed; the same call may succeed later. */
const TRANSIENT_ERRORS = new Set([
  'internal_error',
  'fatal_error',
  'service_unavailable',
  'request_timeout',
  'ratelimited',
]);

/**
 * Maps a failed Web API call to an SB_CHANNEL_* error (STYLE "Errors"): rate limits → rate
 * limited with `retryAfterMs`; token problems → auth failed; Slack's own failures, HTTP 5xx and
 * network errors → retryable send failures; other platform errors (`channel_not_found`,
 * `not_in_channel`, `msg_too_long`…) → final send failures. The bot token travels in the
 * Authorization header, never in these errors; `cause` is left out all the same, because the
 * client's errors keep request details.
 */
export function toChannelError(error: unknown, call: FailedCall): SwitchboardError {
  const where = `slack channel "${call.channelId}": ${call.method}`;
  if (error instanceof webApi.WebAPIRateLimitedError) {
    const retryAfterMs = error.retryAfter * 1000;
    return new SwitchboardError('SB_CHANNEL_RATE_LIMITED', {
      message: `${where} was rate-limited; Slack asks to wait ${retryAfterMs} ms`,
      details: { method: call.method, retry_after_ms: retryAfterMs },
      retryable: true,
      retryAfterMs,
    });
  }
  if (error instanceof webApi.WebAPIPlatformError) {
    const slackError = error.data.error;
    const details = { method: call.method, error: slackError };
    if (AUTH_ERRORS.has(slackError)) {
      return new SwitchboardError('SB_CHANNEL_AUTH_FAILED', {
        message: `${where} failed: Slack refused the bot token (${slackError}); check channels[].bot_token and the app's scopes`,
        details,
      });
    }
    return new SwitchboardError('SB_CHANNEL_SEND_FAILED', {
      message: `${where} failed (${slackError})`,
      details,
      retryable: TRANSIENT_ERRORS.has(slackError),
    });
  }
  if (error instanceof webApi.WebAPIHTTPError) {
    return new SwitchboardError('SB_CHANNEL_SEND_FAILED', {
      message: `${where} failed (HTTP ${error.statusCode})`,
      details: { method: call.method, status: error.statusCode },
      retryable: error.statusCode >= 500,
    });
  }
  if (error instanceof webApi.WebAPIRequestError) {
    // fetch reports `TypeError: fetch failed` with the system error (ECONNREFUSED…) as its cause.
    const original = error.original as Error & { code?: unknown; cause?: { code?: unknown } };
    const code = original.code ?? original.cause?.code;
    const reason = typeof code === 'string' ? code : original.name;
    return new SwitchboardError('SB_CHANNEL_SEND_FAILED', {
      message: `${where} failed: network error (${reason})`,
      details: { method: call.method, reason },
      retryable: true,
    });
  }
  return new SwitchboardError('SB_CHANNEL_SEND_FAILED', {
    message: `${where} failed: ${error instanceof Error ? error.name : 'unknown error'}`,
    details: { method: call.method },
  });
}
