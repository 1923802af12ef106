import { SwitchboardError } from '@switchboard/core';
import { type PlatformFailure, failureKindOf } from './platform-failure.js';
import { redact, redactValue } from './redact.js';

/** Which call of which channel failed, for the error's message and details. */
export interface FailedCall {
  /** The channel type, e.g. `telegram`. */
  type: string;
  /** The configured channel id. */
  channelId: string;
  /** The platform call, e.g. `sendMessage` or `POST /v2/bot/message/push`. */
  call: string;
}

/** Options of `channelFailure`. */
export interface ChannelFailureOptions {
  /** Values masked wherever they appear in the message and details (the channel's tokens). */
  secrets?: readonly string[];
  /** The config path of the credential, named when the platform refuses it: `channels[tg].token`. */
  credentialPath?: string;
}

/** `HTTP 403: 50013: Missing Permissions`: what the platform said, as much as it said. */
export function platformReasonOf({ status, code, description }: PlatformFailure): string {
  const parts = [status === undefined ? undefined : `HTTP ${status}`, code, description];
  const said = parts.filter((part) => part !== undefined && part !== '');
  return said.length === 0 ? 'no reason given' : said.join(': ');
}

/**
 * A failed platform call as an SB_CHANNEL_* error (STYLE "Errors"): rate limited → retryable
 * SB_CHANNEL_RATE_LIMITED with the platform's `retryAfterMs`; a refused credential →
 * SB_CHANNEL_AUTH_FAILED naming its config path; transient failures (5xx, no answer) → retryable
 * SB_CHANNEL_SEND_FAILED; refused calls → final SB_CHANNEL_SEND_FAILED. Message and details carry
 * the platform's reason with every secret masked; no `cause`, since library errors keep request
 * URLs and headers.
 */
export function channelFailure(
  where: FailedCall,
  failure: PlatformFailure,
  options: ChannelFailureOptions = {},
): SwitchboardError {
  const secrets = options.secrets ?? [];
  const at = `${where.type} channel "${where.channelId}": ${where.call}`;
  const details = redactValue({ call: where.call, ...failure }, secrets);
  const kind = failureKindOf(failure);
  if (kind === 'rate_limited') {
    const { retryAfterMs } = failure;
    const wait = retryAfterMs === undefined ? '' : `; the platform asks to wait ${retryAfterMs} ms`;
    return new SwitchboardError('SB_CHANNEL_RATE_LIMITED', {
      message: redact(`${at} was rate-limited${wait}`, secrets),
      details,
      retryable: true,
      retryAfterMs,
    });
  }
  if (kind === 'auth') {
    const check = options.credentialPath === undefined ? '' : `; check ${options.credentialPath}`;
    return new SwitchboardError('SB_CHANNEL_AUTH_FAILED', {
      message: redact(
        `${at} failed: the platform refused the credentials (${platformReasonOf(failure)})${check}`,
        secrets,
      ),
      details,
    });
  }
  const what =
    failure.network === undefined
      ? ` (${platformReasonOf(failure)})`
      : `: network error (${failure.network})`;
  return new SwitchboardError('SB_CHANNEL_SEND_FAILED', {
    message: redact(`${at} failed${what}`, secrets),
    details,
    retryable: kind === 'transient',
  });
}
