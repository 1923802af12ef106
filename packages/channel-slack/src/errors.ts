import { webApi } from '@slack/bolt';
import {
  type FailureKind,
  type PlatformFailure,
  channelFailure,
  networkReasonOf,
} from '@switchboard/channel-kit';
import type { SwitchboardError } from '@switchboard/core';

/** A Web API call, for its error: which channel, which method, and the token to keep out of it. */
export interface WebApiCall {
  /** The configured channel id. */
  channelId: string;
  /** The Web API method, e.g. `chat.postMessage`. */
  method: string;
  token: string;
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
const TRANSIENT_ERRORS = new Set(['internal_error', 'fatal_error', 'service_unavailable', 'request_timeout']);

/** What a Web API `error` string means: a refused token, a rate limit, Slack failing, or a refusal. */
export function slackErrorKind(code: string): FailureKind {
  if (AUTH_ERRORS.has(code)) return 'auth';
  if (code === 'ratelimited') return 'rate_limited';
  return TRANSIENT_ERRORS.has(code) ? 'transient' : 'refused';
}

/**
 * What a failed Web API call says, for the shared mapping. Slack answers HTTP 200 with an `error`
 * string, so its kind comes from that string: token problems → auth, `ratelimited` → rate
 * limited, Slack's own failures → transient, anything else (`channel_not_found`, `not_in_channel`,
 * `msg_too_long`…) → refused. A network error keeps only its system code.
 */
export function failureOf(error: unknown): PlatformFailure {
  if (error instanceof webApi.WebAPIRateLimitedError)
    return { status: 429, retryAfterMs: error.retryAfter * 1000 };
  if (error instanceof webApi.WebAPIPlatformError) {
    const code = error.data.error;
    return { code, kind: slackErrorKind(code) };
  }
  if (error instanceof webApi.WebAPIHTTPError) return { status: error.statusCode };
  if (error instanceof webApi.WebAPIRequestError) return { network: networkReasonOf(error.original) };
  return { description: error instanceof Error ? error.name : 'unknown error' };
}

/** A failed Web API call as an SB_CHANNEL_* error (`channelFailure`), without the token. */
export function toChannelError(error: unknown, call: WebApiCall): SwitchboardError {
  return channelFailure({ type: 'slack', channelId: call.channelId, call: call.method }, failureOf(error), {
    secrets: [call.token],
    credentialPath: `channels[${call.channelId}].bot_token`,
  });
}
